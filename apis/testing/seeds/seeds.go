// Package seeds extracts the fenced examples from the project's seed
// documents (OpenKruise release notes kept under shared/seeds) so that tests
// can check that every manifest written for OpenKruise is understood by this
// API, both offline (round trip through the Go types) and by a real API server.
//
// It is test support code: it has no dependency beyond sigs.k8s.io/yaml and
// is imported only from _test files.
package seeds

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// EnvDir overrides the seed directory.
const EnvDir = "FLOTILLA_SEEDS"

// Files are the seed documents (by name prefix) whose examples are checked:
// all five. 000, 003 and 004 fence their examples; 001 and 002 are pages
// saved as plain text, their manifests flattened (no fences, no indentation),
// so their examples are found by shape (see parseFlat) and each must have a
// re-indented copy in Reindented or a reason in Skipped.
var Files = []string{"000", "001", "002", "003", "004"}

// Example is one fenced code block of a seed document.
type Example struct {
	// File is the base name of the seed document.
	File string
	// Index is the 1-based position of the block in its document.
	Index int
	// Line is the 1-based line of the opening fence.
	Line int
	// Lang is the fence info string ("yaml", "go", ...).
	Lang string
	// Raw is the block content as written.
	Raw string
	// Cleaned is Raw with the "..." placeholders of elided parts removed.
	Cleaned string
	// Object is Cleaned parsed as YAML (nil if it is not YAML or does not parse).
	Object map[string]interface{}
	// ParseError is set when a YAML block does not parse.
	ParseError error
	// APIVersion and Kind are read from Object.
	APIVersion, Kind string
	// Elided is true when the author elided parts with "..." placeholders.
	Elided bool
	// Flattened is true for an example found in a document without fences:
	// Raw lost its indentation, so Object is nil until a re-indented copy
	// (Reindented) replaces it in InScope.
	Flattened bool
}

// ID names the example in test output, e.g. "000#3" (repaired copies:
// their key in Repaired).
func (e Example) ID() string {
	if e.Index == 0 {
		return e.File
	}
	return fmt.Sprintf("%s#%d", e.File[:3], e.Index)
}

func fmtErr(format string, args ...interface{}) error { return fmt.Errorf(format, args...) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Group returns the API group of the example ("" for the core group).
func (e Example) Group() string {
	if i := strings.Index(e.APIVersion, "/"); i >= 0 {
		return e.APIVersion[:i]
	}
	return ""
}

// Dir returns the seed directory: $FLOTILLA_SEEDS, else <repo>/../shared/seeds
// where <repo> is the nearest parent of the working directory holding go.work,
// else, for a clone made from a local checkout (`git clone <checkout> /tmp/x`),
// shared/seeds beside that checkout (the clone's origin).
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		if _, err := os.Stat(d); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvDir, d, err)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			s := filepath.Join(filepath.Dir(d), "shared", "seeds")
			if _, err := os.Stat(s); err == nil {
				return s, nil
			}
			if o := besideOrigin(d); o != "" {
				return o, nil
			}
			return "", fmt.Errorf("seed directory %s not found, nor beside the clone's origin (set %s)", s, EnvDir)
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work above %s; set %s to the seed directory", wd, EnvDir)
		}
	}
}

// Load reads every example of the seed documents listed in Files: the fenced
// blocks, or for a document without fences the flattened manifests in it.
// It fails when a document is missing or holds no example at all.
func Load(dir string) ([]Example, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Example
	for _, prefix := range Files {
		var name string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) && !e.IsDir() {
				name = e.Name()
				break
			}
		}
		if name == "" {
			return nil, fmt.Errorf("seed document %s* not found in %s", prefix, dir)
		}
		exs, err := parseFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if len(exs) == 0 {
			if exs, err = parseFlat(filepath.Join(dir, name)); err != nil {
				return nil, err
			}
		}
		if len(exs) == 0 {
			return nil, fmt.Errorf("seed document %s has no examples", name)
		}
		out = append(out, exs...)
	}
	return out, nil
}

var fence = regexp.MustCompile("^\\s*```\\s*([A-Za-z0-9_+-]*)\\s*$")

func parseFile(path string) ([]Example, error) {
	var (
		out  []Example
		cur  *Example
		body []string
	)
	err := eachLine(path, func(n int, line string) {
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			cur = &Example{File: filepath.Base(path), Index: len(out) + 1, Line: n, Lang: strings.ToLower(m[1])}
			body = nil
		case cur != nil && m != nil && m[1] == "":
			cur.Raw = strings.Join(body, "\n") + "\n"
			finish(cur)
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body = append(body, line)
		}
	})
	if err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: unterminated fence at line %d", path, cur.Line)
	}
	return out, nil
}

// eachLine calls f with every line of the file at path and its 1-based number.
func eachLine(path string, f func(n int, line string)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		f(n, sc.Text())
	}
	return sc.Err()
}

var (
	// a line holding only a placeholder: "...", "- ...", "# ..." (comments are harmless anyway)
	placeholderLine = regexp.MustCompile(`^\s*(-\s*)?\.\.\.\s*$`)
	// "key: ..." -> "key:"
	placeholderValue = regexp.MustCompile(`^(\s*[^#\s][^:#]*:)\s*\.\.\.\s*$`)
)

// RemovePlaceholders drops the "..." lines and values the seeds use for
// elided parts. It reports whether anything was removed.
func RemovePlaceholders(s string) (string, bool) {
	var out []string
	changed := false
	for _, l := range strings.Split(s, "\n") {
		if placeholderLine.MatchString(l) {
			changed = true
			continue
		}
		if m := placeholderValue.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
			changed = true
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n"), changed
}

func finish(e *Example) {
	e.Cleaned, e.Elided = RemovePlaceholders(e.Raw)
	if e.Lang != "yaml" && e.Lang != "yml" {
		return
	}
	var obj map[string]interface{}
	if err := yaml.Unmarshal([]byte(e.Cleaned), &obj); err != nil {
		e.ParseError = err
		return
	}
	e.Object = obj
	e.APIVersion, _ = obj["apiVersion"].(string)
	e.Kind, _ = obj["kind"].(string)
}

// Leaves returns "path=value" strings for every leaf of a generic JSON-like
// value, sorted. Null values and empty maps are leaves too. It helps
// assertions print what is missing.
func Leaves(v interface{}) []string {
	var out []string
	walk("", v, func(p string, leaf interface{}) {
		out = append(out, fmt.Sprintf("%s=%v", p, leaf))
	})
	sort.Strings(out)
	return out
}

func walk(p string, v interface{}, f func(string, interface{})) {
	switch t := v.(type) {
	case map[string]interface{}:
		if len(t) == 0 {
			f(p, t)
		}
		for k, c := range t {
			walk(p+"."+k, c, f)
		}
	case []interface{}:
		if len(t) == 0 {
			f(p, t)
		}
		for i, c := range t {
			walk(fmt.Sprintf("%s[%d]", p, i), c, f)
		}
	default:
		f(p, v)
	}
}

// Missing lists the leaves of want that got does not contain with an equal
// value ("no field was lost"). A null leaf in want (an elided or empty
// value) only requires the key to exist. Lists must match element-wise for
// the elements want has.
func Missing(want, got interface{}) []string {
	var out []string
	missing("", want, got, &out)
	sort.Strings(out)
	return out
}

func missing(p string, want, got interface{}, out *[]string) {
	switch w := want.(type) {
	case nil:
		return
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			if len(w) == 0 && got == nil {
				return
			}
			*out = append(*out, fmt.Sprintf("%s: want object, got %T", p, got))
			return
		}
		for k, wc := range w {
			gc, ok := g[k]
			if !ok {
				if wc == nil {
					continue
				}
				*out = append(*out, fmt.Sprintf("%s.%s: missing (want %v)", p, k, wc))
				continue
			}
			missing(p+"."+k, wc, gc, out)
		}
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok || len(g) < len(w) {
			*out = append(*out, fmt.Sprintf("%s: want list of %d, got %v", p, len(w), got))
			return
		}
		for i := range w {
			missing(fmt.Sprintf("%s[%d]", p, i), w[i], g[i], out)
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			*out = append(*out, fmt.Sprintf("%s: want %v, got %v", p, want, got))
		}
	}
}

// Merge deep-merges overlay onto base (both generic JSON-like maps) and
// returns the result; overlay wins, lists are replaced, null overlay
// values keep the base value. Inputs are not modified.
func Merge(base, overlay map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range base {
		out[k] = deepCopy(v)
	}
	for k, ov := range overlay {
		if ov == nil {
			continue
		}
		bm, bok := out[k].(map[string]interface{})
		om, ook := ov.(map[string]interface{})
		if bok && ook {
			out[k] = Merge(bm, om)
			continue
		}
		out[k] = deepCopy(ov)
	}
	return out
}

func deepCopy(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, c := range t {
			m[k] = deepCopy(c)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(t))
		for i, c := range t {
			l[i] = deepCopy(c)
		}
		return l
	default:
		return v
	}
}

// besideOrigin returns shared/seeds beside the local checkout repo was cloned
// from, or "" when repo's origin is not a local directory or has none.
func besideOrigin(repo string) string {
	out, err := exec.Command("git", "-C", repo, "config", "--get", "remote.origin.url").Output()
	if err != nil {
		return ""
	}
	origin := strings.TrimPrefix(strings.TrimSpace(string(out)), "file://")
	if !filepath.IsAbs(origin) {
		return ""
	}
	if fi, err := os.Stat(origin); err != nil || !fi.IsDir() {
		return ""
	}
	s := filepath.Join(filepath.Dir(filepath.Clean(origin)), "shared", "seeds")
	if _, err := os.Stat(s); err != nil {
		return ""
	}
	return s
}
