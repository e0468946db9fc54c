// Command genchart writes charts/flotilla (templates, values.yaml, README.md) from the kustomize overlays in
// deploy/ and kit/README.md's table of feature gates. Run from anywhere in the repository:
//
//	cd charts/tools && GOWORK=off go run ./cmd/genchart
//
// -from DIR renders deploy/ and reads kit/README.md of another checkout (e.g. `git archive HEAD deploy kit/README.md`
// unpacked), still writing this repository's chart: the chart of a commit while deploy/ has uncommitted changes.
//
// hack/verify.sh runs it and fails on a diff, so the chart never drifts from deploy/.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flotilla-dev/flotilla/charts/tools/gen"
)

func main() {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "genchart: run inside the repository:", err)
		os.Exit(1)
	}
	from := flag.String("from", "", "render deploy/ and read kit/README.md of this directory instead of the repository's")
	flag.Parse()
	root := strings.TrimSpace(string(out))
	src := root
	if *from != "" {
		src = *from
	}
	if err := gen.GenerateTo(src, filepath.Join(root, "charts", "flotilla")); err != nil {
		fmt.Fprintln(os.Stderr, "genchart:", err)
		os.Exit(1)
	}
}
