package seeds

import (
	"path/filepath"
	"regexp"
	"strings"
)

var (
	// A flattened manifest starts with its apiVersion, or is a bare "spec:"
	// fragment, or an indented YAML opener ("    subresources:") of a snippet.
	flatStart = regexp.MustCompile(`^(apiVersion|spec):|^ {4}[A-Za-z]\w*:\s*$`)
	// and goes on while lines look like YAML: "key: value", "- item", a
	// comment, or an elision. Prose (a blank line, "  • ...", Chinese text) ends it.
	flatYAML = regexp.MustCompile(`^\s*(-\s+)?[A-Za-z0-9_.\/'"<>-]+:(\s|$|#)|^\s*-\s|^\s*#|^\s*\.\.\.\s*$`)
)

// parseFlat finds the manifests of a seed document saved without fences or
// indentation. Each becomes an Example numbered in document order (so its ID
// is "002#3" like a fenced block's), Flattened and without Object.
func parseFlat(path string) ([]Example, error) {
	var (
		out   []Example
		body  []string
		start int
	)
	flush := func() {
		if body == nil {
			return
		}
		e := Example{File: filepath.Base(path), Index: len(out) + 1, Line: start, Lang: "yaml", Flattened: true,
			Raw: strings.Join(body, "\n") + "\n"}
		e.Cleaned, e.Elided = RemovePlaceholders(e.Raw)
		out = append(out, e)
		body = nil
	}
	err := eachLine(path, func(n int, line string) {
		switch {
		case body == nil && flatStart.MatchString(line):
			start, body = n, []string{line}
		case body != nil && flatYAML.MatchString(line):
			body = append(body, line)
		default:
			flush()
		}
	})
	flush()
	return out, err
}

// Reindent is a seed example of a flattened document written out again with
// its indentation, so that it can be parsed and submitted.
type Reindent struct {
	// YAML is the example with its structure restored.
	YAML string
	// Changed names each line of the flattened original (as normalised by
	// flatLines) that YAML does not keep verbatim, with the reason: pseudo-syntax
	// such as "Retain | Delete", or a field the post wrote in an older form.
	Changed map[string]string
}

// flatLines are the lines of a manifest with indentation, comments and
// elisions dropped: what a flattened copy and its re-indented copy share.
func flatLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(trailingComment.ReplaceAllString(l, "${1}"))
		if l == "" || strings.HasPrefix(l, "#") || placeholderLine.MatchString(l) {
			continue
		}
		if m := placeholderValue.FindStringSubmatch(l); m != nil {
			l = strings.TrimSpace(m[1])
		}
		out = append(out, l)
	}
	return out
}

// a comment after a value or a key ("key:# optional", "10% # percent"); the colon stays
var trailingComment = regexp.MustCompile(`(:|\s)#[^'"]*$`)

// unfaithful lists the lines of the flattened original that the re-indented
// copy r neither keeps nor explains in r.Changed, and the Changed entries that
// name no line of the original (stale explanations).
func unfaithful(flat string, r Reindent) []string {
	kept := map[string]bool{}
	for _, l := range flatLines(r.YAML) {
		kept[l] = true
	}
	var out []string
	used := map[string]bool{}
	for _, l := range flatLines(flat) {
		if _, ok := r.Changed[l]; ok {
			used[l] = true
			continue
		}
		if !kept[l] {
			out = append(out, "not kept: "+l)
		}
	}
	for _, l := range sortedKeys(r.Changed) {
		if !used[l] {
			out = append(out, "explains a line the original does not have: "+l)
		}
	}
	return out
}
