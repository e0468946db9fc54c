package depcheck

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const kit = "github.com/flotilla-dev/flotilla/kit/"

// agentPackages are the kit packages the node agent imports, directly or
// through one another, and so must leave the clientset out.
var agentPackages = []string{
	"podcontrol", "inplace", "revision", "podutil", "containermeta",
	"controller", "expectations", "features", "node/cri",
}

// clientset are the packages whose init registers every built-in API group.
var clientset = []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/kubernetes/scheme"}

// TestAgentPackagesLeaveOutTheClientset fails when one of agentPackages
// links k8s.io/client-go/kubernetes (or its scheme), naming the chain of
// imports that brings it in. kit/podcontrol/podclient, which must link it,
// is listed too, so the check is seen to find what it looks for.
func TestAgentPackagesLeaveOutTheClientset(t *testing.T) {
	const control = kit + "podcontrol/podclient"
	roots := []string{control}
	for _, p := range agentPackages {
		roots = append(roots, kit+p)
	}
	imports := importGraph(t, roots)
	if chain := pathTo(imports, control, clientset); chain == nil {
		t.Fatalf("the check finds no clientset under %s, which is built on it: go list's output is not read right", control)
	}
	for _, root := range roots[1:] {
		if chain := pathTo(imports, root, clientset); chain != nil {
			t.Errorf("%s links %s (%s). The node agent (probe-agent) imports %s, and the clientset's init registers "+
				"every API group (about 20 MiB of the agent's memory): put the code that needs the clientset in a "+
				"package of its own, as kit/podcontrol/podclient, kit/revision/revisionclient and kit/inplace/inplaceclient are",
				root, chain[len(chain)-1], strings.Join(chain, " → "), root)
		}
	}
}

// importGraph is every package under roots (roots included) with its
// imports, from go list.
func importGraph(t *testing.T, roots []string) map[string][]string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}, roots...)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			graph[f[0]] = f[1:]
		}
	}
	for _, r := range roots {
		if _, ok := graph[r]; !ok {
			t.Fatalf("go list did not list %s", r)
		}
	}
	return graph
}

// pathTo is a shortest chain of imports from root to one of targets, or
// nil when there is none.
func pathTo(graph map[string][]string, root string, targets []string) []string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if slices.Contains(targets, p) {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, imp := range graph[p] {
			if _, seen := prev[imp]; !seen {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return nil
}
