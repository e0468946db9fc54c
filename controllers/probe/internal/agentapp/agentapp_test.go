package agentapp

import (
	"context"
	"io"
	"testing"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/apptest"
	"github.com/flotilla-dev/flotilla/kit/features"
)

func TestBinary(t *testing.T) { apptest.CheckBinary(t, Binary) }

// An agent runs on every node: leader election is off unless asked for,
// and the node name comes from the flag or $NODE_NAME.
func TestAgentFlags(t *testing.T) {
	t.Setenv("NODE_NAME", "node-a")
	p, err := kitapp.Parse(Binary(), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if p.Options.LeaderElect {
		t.Fatal("probe-agent elects a leader by default")
	}
	p, err = kitapp.Parse(Binary(), []string{"--leader-elect=true"}, io.Discard)
	if err != nil || !p.Options.LeaderElect {
		t.Fatalf("--leader-elect=true not honoured: %v", err)
	}
}

func TestSetupNeedsNodeName(t *testing.T) {
	err := setup(context.Background(), &kitapp.Env{}, &options{})
	if err == nil {
		t.Fatal("setup without a node name succeeded")
	}
}

// KruiseDaemon (off by default, as kit/features has it) is what turns the ContainerRecreateRequest worker on
// (issue 28); the probes do not depend on it.
func TestKruiseDaemonGate(t *testing.T) {
	p, err := kitapp.Parse(Binary(), []string{"--node-name=n"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if p.Gates.Enabled(features.KruiseDaemon) {
		t.Fatal("KruiseDaemon on by default")
	}
	p, err = kitapp.Parse(Binary(), []string{"--node-name=n", "--feature-gates=KruiseDaemon=true"}, io.Discard)
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
		p, err := kitapp.Parse(Binary(), append([]string{"--node-name=n"}, tc.args...), io.Discard)
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
		p, err := kitapp.Parse(Binary(), append([]string{"--node-name=n"}, tc.args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Gates.Enabled(features.ImagePullJobGate); got != tc.want {
			t.Errorf("%v: ImagePullJobGate %v, want %v", tc.args, got, tc.want)
		}
	}
}
