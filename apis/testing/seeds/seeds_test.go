package seeds

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A clone of a local checkout finds the seeds beside that checkout; a clone
// without a local origin finds nothing there.
func TestBesideOrigin(t *testing.T) {
	root := t.TempDir()
	checkout := filepath.Join(root, "main")
	seeds := filepath.Join(root, "shared", "seeds")
	if err := os.MkdirAll(seeds, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", checkout)
	git("-C", checkout, "commit", "-q", "--allow-empty", "-m", "x")
	clone := filepath.Join(t.TempDir(), "clone")
	git("clone", "-q", checkout, clone)

	if got := besideOrigin(clone); got != seeds {
		t.Fatalf("besideOrigin(clone) = %q, want %q", got, seeds)
	}
	if got := besideOrigin(checkout); got != "" {
		t.Fatalf("besideOrigin(checkout without origin) = %q, want none", got)
	}
}

// A page saved as text: manifests lose fences and indentation, prose around them ends each one.
const flatDoc = `Some prose about a feature.

apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
spec:
...
replicas: 2 # two pods
updateStrategy:
type: InPlaceIfPossible
当我们更新 CloneSet 之后
spec:
# ...
strategy:
failurePolicy: Fail

  • failurePolicy: Fail or Ignore
`

func TestParseFlat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "009_page.txt")
	if err := os.WriteFile(path, []byte(flatDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	exs, err := parseFlat(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 2 {
		t.Fatalf("found %d examples, want 2: %+v", len(exs), exs)
	}
	if exs[0].ID() != "009#1" || exs[0].Line != 3 || !exs[0].Flattened || !exs[0].Elided {
		t.Errorf("first example: %+v", exs[0])
	}
	if want := "spec:\n# ...\nstrategy:\nfailurePolicy: Fail\n"; exs[1].Raw != want || exs[1].Line != 11 {
		t.Errorf("second example at line %d: %q, want %q", exs[1].Line, exs[1].Raw, want)
	}
}

func TestUnfaithful(t *testing.T) {
	flat := "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nspec:\n...\nreplicas: 2 # two pods\ntype: A | B\n"
	good := Reindent{YAML: "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nspec:\n  replicas: 2\n  updateStrategy:\n    type: A\n",
		Changed: map[string]string{"type: A | B": "a choice"}}
	if bad := unfaithful(flat, good); len(bad) != 0 {
		t.Errorf("a faithful copy is reported: %v", bad)
	}
	lost := good
	lost.YAML = "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nspec:\n  replicas: 3\n"
	if bad := unfaithful(flat, lost); len(bad) != 1 || bad[0] != "not kept: replicas: 2" {
		t.Errorf("a changed value: %v", bad)
	}
	stale := good
	stale.Changed = map[string]string{"type: A | B": "a choice", "kind: DaemonSet": "gone"}
	if bad := unfaithful(flat, stale); len(bad) != 1 || bad[0] != "explains a line the original does not have: kind: DaemonSet" {
		t.Errorf("a stale explanation: %v", bad)
	}
}

// A flattened example needs a re-indented copy or a skip reason.
func TestInScopeRefusesUnclassifiedFlatExample(t *testing.T) {
	e := Example{File: "009_page.txt", Index: 1, Line: 3, Lang: "yaml", Flattened: true, Raw: "apiVersion: x/v1\nkind: Y\n"}
	if _, err := InScope([]Example{e}); err == nil || !strings.Contains(err.Error(), "009#1") {
		t.Errorf("InScope accepted an unclassified flattened example: %v", err)
	}
}
