package seeds

import (
	"os"
	"os/exec"
	"path/filepath"
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
