package gen

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// A doc is one rendered object on its way to a chart template: the generator replaces fields of the object with
// tokens (plain YAML scalars no manifest contains), marshals it, then swaps each token for template text. Working
// on the parsed object (not on text) is what lets the same paths be found however deploy/ formats its YAML.
type doc struct {
	obj    map[string]any
	tokens []token
}

type tokenKind int

const (
	// inline: the token is (part of) a scalar; replaced by the text where it stands.
	inline tokenKind = iota
	// value: the token is a key's whole value; the line becomes "<key>:" + text, text given the key's indent.
	value
	// line: the token is a list item or a key of its own; the whole line becomes text, given the line's indent.
	line
)

type token struct {
	kind tokenKind
	text func(indent int) string
}

func (d *doc) add(kind tokenKind, text func(indent int) string) string {
	d.tokens = append(d.tokens, token{kind: kind, text: text})
	return fmt.Sprintf("zzHELMT%dX", len(d.tokens)-1)
}

// Inline returns a token standing for text inside a scalar.
func (d *doc) Inline(text string) string {
	return d.add(inline, func(int) string { return text })
}

// Value returns a token to set as a key's value; the value becomes text (given the key's indent).
func (d *doc) Value(text func(indent int) string) string { return d.add(value, text) }

// Line returns a token to put as a list item or a map key; its line becomes text (given the line's indent), which
// may be empty.
func (d *doc) Line(text func(indent int) string) string { return d.add(line, text) }

// Tokens start with "zz" so that, as map keys, they sort after every real key (the first key of a list item shares
// its line with the item's "- ").
var tokenRE = regexp.MustCompile(`zzHELMT([0-9]+)X`)

// render marshals the object and swaps the tokens for their template text.
func (d *doc) render() (string, error) {
	out, err := yaml.Marshal(d.obj)
	if err != nil {
		return "", fmt.Errorf("marshal %s: %w", describe(d.obj), err)
	}
	if strings.Contains(string(out), "{{") {
		return "", fmt.Errorf("%s contains \"{{\", which Helm would read as a template: escape it in the generator", describe(d.obj))
	}
	var b strings.Builder
	used := map[int]bool{}
	for _, l := range strings.SplitAfter(string(out), "\n") {
		m := tokenRE.FindStringSubmatchIndex(l)
		if m == nil {
			b.WriteString(l)
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		n, _ := strconv.Atoi(l[m[2]:m[3]])
		t := d.tokens[n]
		switch t.kind {
		case inline:
			b.WriteString(tokenRE.ReplaceAllStringFunc(l, func(s string) string {
				k, _ := strconv.Atoi(s[len("zzHELMT") : len(s)-1])
				used[k] = true
				return d.tokens[k].text(indent)
			}))
			continue
		case value:
			key, _, ok := strings.Cut(l, ": ")
			if !ok {
				return "", fmt.Errorf("%s: value token on a line without a key: %q", describe(d.obj), l)
			}
			b.WriteString(key + ":" + t.text(indent) + "\n")
		case line:
			b.WriteString(t.text(indent))
		}
		used[n] = true
	}
	for i := range d.tokens {
		if !used[i] {
			return "", fmt.Errorf("%s: token %d not found in the marshalled object", describe(d.obj), i)
		}
	}
	return b.String(), nil
}

func describe(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v", obj["kind"], md["name"])
}

// path helpers on unstructured objects.

func getMap(obj map[string]any, path ...string) map[string]any {
	cur := obj
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

func getList(obj map[string]any, path ...string) []any {
	m := getMap(obj, path[:len(path)-1]...)
	if m == nil {
		return nil
	}
	l, _ := m[path[len(path)-1]].([]any)
	return l
}

func pad(n int) string { return strings.Repeat(" ", n) }
