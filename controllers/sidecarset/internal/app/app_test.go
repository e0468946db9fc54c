package app

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-dev/flotilla/kit/app/apptest"
)

func TestBinary(t *testing.T) {
	apptest.CheckBinary(t, Binary)
	if len(Gates()) == 0 {
		t.Fatal("sidecarset-controller registers its feature gates")
	}
}

// Revisions and the whitelist live in the controller's namespace, wherever
// the Lease is (the fleet e2e test moves the Lease to its own namespace,
// where the RBAC grants no revisions: the webhook never became ready), unless
// --revision-namespace names another (kruise-system, to take over what
// OpenKruise left there: issue 23).
func TestRevisionNamespace(t *testing.T) {
	parse := func(args ...string) *Options {
		o := NewOptions()
		fs := pflag.NewFlagSet(Name, pflag.ContinueOnError)
		o.AddFlags(fs)
		require.NoError(t, fs.Parse(args))
		return o
	}
	t.Setenv("POD_NAMESPACE", "")
	assert.Equal(t, "flotilla-system", parse().Namespace())
	t.Setenv("POD_NAMESPACE", "mine")
	assert.Equal(t, "mine", parse().Namespace())
	assert.Equal(t, "kruise-system", parse("--revision-namespace=kruise-system").Namespace())
	// The binary's own flag set has it (what an operator's Deployment args reach).
	fs := pflag.NewFlagSet(Name, pflag.ContinueOnError)
	Binary().AddFlags(fs)
	require.NotNil(t, fs.Lookup("revision-namespace"))
}
