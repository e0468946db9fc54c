package podcontrol

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// lintExempt are the directories (relative to the repository root, each
// with everything below it) whose pod writes are not a controller's:
// kit/podcontrol/podclient, the seam's Writer over the clientset (this
// package itself writes only through a Writer), and kit/testenv, the
// integration tests' stand-in for users and kubelets (it creates and patches
// pods as they would).
var lintExempt = []string{"kit/podcontrol/podclient", "kit/testenv"}

// podReads are the only calls allowed on a clientset's Pods(ns).
var podReads = map[string]bool{"Get": true, "List": true, "Watch": true}

// TestNoDirectPodWrites fails when a non-test Go file under controllers/ or
// kit/ (but lintExempt) writes pods through a clientset instead of
// PodControl: any CoreV1().Pods(ns) that is not immediately read from
// (Get/List/Watch) — a write verb, or the pod client kept for later — and
// any PolicyV1*().Evictions(ns). It parses the files, so a call split over
// lines is caught as well.
func TestNoDirectPodWrites(t *testing.T) {
	root := repoRoot(t)
	var found []string
	for _, top := range []string{"controllers", "kit"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				for _, ex := range lintExempt {
					if rel == ex {
						return filepath.SkipDir
					}
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			found = append(found, directPodWrites(t, path, rel)...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range found {
		t.Errorf("direct pod write (use kit/podcontrol): %s", f)
	}
}

// directPodWrites lists file's offending calls as "path:line: code".
func directPodWrites(t *testing.T, path, rel string) []string {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", rel, err)
	}
	var out []string
	report := func(n ast.Node, what string) {
		out = append(out, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+what)
	}
	// parents maps a Pods(...) call to the selector that uses it, if any.
	parent := map[ast.Node]ast.Node{}
	ast.Inspect(file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			parent[sel.X] = sel
		}
		if call, ok := n.(*ast.CallExpr); ok {
			parent[call.Fun] = call
		}
		return true
	})
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		switch sel.Sel.Name {
		case "Pods":
			if !calls(sel.X, "CoreV1") {
				return true // a lister's Pods(ns), or anything not a clientset
			}
			next, _ := parent[call].(*ast.SelectorExpr)
			if next != nil && podReads[next.Sel.Name] {
				if _, called := parent[next].(*ast.CallExpr); called {
					return true
				}
			}
			what := "CoreV1().Pods(...) kept or passed on"
			if next != nil {
				what = "CoreV1().Pods(...)." + next.Sel.Name
			}
			report(call, what)
		case "Evictions":
			if calls(sel.X, "PolicyV1") || calls(sel.X, "PolicyV1beta1") || calls(sel.X, "CoreV1") {
				report(call, "Evictions(...)")
			}
		}
		return true
	})
	return out
}

// calls reports whether x is a call of a method named name (x.name(...)).
func calls(x ast.Expr, name string) bool {
	c, ok := x.(*ast.CallExpr)
	if !ok {
		return false
	}
	s, ok := c.Fun.(*ast.SelectorExpr)
	return ok && s.Sel.Name == name
}

// repoRoot walks up from the test's directory to the one holding go.work.
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.work above the test's directory")
		}
		dir = up
	}
}

// TestDirectPodWritesDetector: the detector sees writes split over lines
// and kept pod clients, and lets reads and listers through.
func TestDirectPodWritesDetector(t *testing.T) {
	src := `package x
func f() {
	c.kube.CoreV1().
		Pods(ns).
		Delete(ctx, name, opts)
	pods := c.kube.CoreV1().Pods(ns)
	_ = c.kube.PolicyV1().Evictions(ns).Evict(ctx, ev)
	_, _ = c.kube.CoreV1().Pods(ns).Get(ctx, name, opts)
	_, _ = c.pods.Pods(ns).List(sel)
	_, _ = c.kube.CoreV1().Pods(ns).Watch(ctx, opts)
}
`
	path := filepath.Join(t.TempDir(), "x.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := directPodWrites(t, path, "x.go")
	want := []string{"x.go:3: CoreV1().Pods(...).Delete", "x.go:6: CoreV1().Pods(...) kept or passed on", "x.go:7: Evictions(...)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
