package agentapp

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/kit/app/apptest"
	"github.com/flotilla-dev/flotilla/kit/app/shell"
	"github.com/flotilla-dev/flotilla/kit/features"
)

func TestBinary(t *testing.T) {
	apptest.CheckShellBinary(t, Binary)
}

// An agent runs on every node: leader election is off (the shell has none
// and refuses --leader-elect=true), and the node name comes from the flag
// or $NODE_NAME.
func TestAgentFlags(t *testing.T) {
	t.Setenv("NODE_NAME", "node-a")
	p, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Options.LeaderElect {
		t.Fatal("probe-agent elects a leader by default")
	}
	err = shell.Run(context.Background(), Binary(), []string{"--leader-elect=true", "--kubeconfig=/nonexistent"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--leader-elect must be false") {
		t.Fatalf("--leader-elect=true: got %v, want a refusal", err)
	}
}

func parse(args []string) (*shell.Parsed, error) {
	b := Binary()
	return shell.Parse(b.Name, b.Gates, b.AddFlags, args, io.Discard)
}

// The agent links neither client-go's typed clientset nor a generated one
// (nor informer factories, leader election or pprof): their start-up registration
// of every API group was most of its memory (issue 28, bench/RESULTS.md).
func TestAgentLeavesOutTheClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "grpcnotrace", "../../cmd/probe-agent").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/client-go/tools/leaderelection",
		"k8s.io/client-go/applyconfigurations", "github.com/flotilla-dev/flotilla/client/clientset",
		"github.com/flotilla-dev/flotilla/client/informers", "github.com/flotilla-dev/flotilla/client/applyconfiguration",
		// Without net/http/pprof nothing reaches runtime.MemProfile, and the
		// linker turns the runtime's memory profiling off: no profiler tables.
		"net/http/pprof"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("probe-agent links %s", dep)
			}
		}
	}
}

func TestSetupNeedsNodeName(t *testing.T) {
	err := setup(context.Background(), &shell.Env{}, &options{})
	if err == nil {
		t.Fatal("setup without a node name succeeded")
	}
}

// KruiseDaemon (off by default, as kit/features has it) is what turns the ContainerRecreateRequest worker on
// (issue 28); the probes do not depend on it.
func TestKruiseDaemonGate(t *testing.T) {
	p, err := parse([]string{"--node-name=n"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Gates.Enabled(features.KruiseDaemon) {
		t.Fatal("KruiseDaemon on by default")
	}
	p, err = parse([]string{"--node-name=n", "--feature-gates=KruiseDaemon=true"})
	if err != nil || !p.Gates.Enabled(features.KruiseDaemon) {
		t.Fatalf("--feature-gates=KruiseDaemon=true not accepted: %v", err)
	}
}

// InPlaceUpdateEnvFromMetadata turns the env-from-metadata worker on; like OpenKruise it needs KruiseDaemon, so
// it is off unless KruiseDaemon is on, and on with it by default.
func TestInPlaceUpdateEnvFromMetadataGate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--feature-gates=InPlaceUpdateEnvFromMetadata=true"}, false},
		{[]string{"--feature-gates=KruiseDaemon=true"}, true},
		{[]string{"--feature-gates=KruiseDaemon=true,InPlaceUpdateEnvFromMetadata=false"}, false},
	} {
		p, err := parse(append([]string{"--node-name=n"}, tc.args...))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Gates.Enabled(features.InPlaceUpdateEnvFromMetadata); got != tc.want {
			t.Errorf("%v: InPlaceUpdateEnvFromMetadata %v, want %v", tc.args, got, tc.want)
		}
	}
}

// ImagePullJobGate turns the NodeImage puller on: off by default, forced off without KruiseDaemon (OpenKruise's
// rule), and a second --feature-gates flag (an overlay of the user's may append one) adds to the first.
func TestImagePullJobGate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--feature-gates=KruiseDaemon=true"}, false},
		{[]string{"--feature-gates=ImagePullJobGate=true"}, false},
		{[]string{"--feature-gates=KruiseDaemon=true,ImagePullJobGate=true"}, true},
		{[]string{"--feature-gates=KruiseDaemon=true", "--feature-gates=ImagePullJobGate=true"}, true},
	} {
		p, err := parse(append([]string{"--node-name=n"}, tc.args...))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Gates.Enabled(features.ImagePullJobGate); got != tc.want {
			t.Errorf("%v: ImagePullJobGate %v, want %v", tc.args, got, tc.want)
		}
	}
}
