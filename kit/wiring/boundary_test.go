package wiring

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Only this package may import the generated client: kit/app and the rest of
// kit must build without it. The one other exception is kit/testenv/lab, the
// integration lab: only tests import it, and what it hands them is the
// generated clientset and informers.
func TestOnlyWiringImportsTheClient(t *testing.T) {
	const client = "github.com/flotilla-dev/flotilla/client"
	kitRoot, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(kitRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == filepath.Join(kitRoot, "wiring") || path == filepath.Join(kitRoot, "testenv", "lab")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == client || strings.HasPrefix(p, client+"/") {
				rel, _ := filepath.Rel(kitRoot, path)
				t.Errorf("%s imports %s: only kit/wiring may use the generated client", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("walked only %d Go files under %s: wrong root?", files, kitRoot)
	}
}
