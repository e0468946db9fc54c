// Command genchart writes charts/flotilla (templates, values.yaml, README.md) from the kustomize overlays in
// deploy/ and kit/README.md's table of feature gates. Run from anywhere in the repository:
//
//	go run ./charts/tools/cmd/genchart
//
// hack/verify.sh runs it and fails on a diff, so the chart never drifts from deploy/.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/flotilla-dev/flotilla/charts/tools/gen"
)

func main() {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "genchart: run inside the repository:", err)
		os.Exit(1)
	}
	if err := gen.Generate(strings.TrimSpace(string(out))); err != nil {
		fmt.Fprintln(os.Stderr, "genchart:", err)
		os.Exit(1)
	}
}
