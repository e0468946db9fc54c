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

// The SidecarSet CRD's conversion goes through Service
// sidecarset-controller-conversion (publishNotReadyAddresses, the manifests),
// not the admission Service of Ready endpoints: a replica's readiness waits
// on the SidecarSet informer, which needs conversion (issue 23). A default,
// since controller-defaults replaces the Deployment's args.
func TestConversionServiceDefault(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet(Name, pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse(nil))
	assert.Equal(t, "sidecarset-controller-conversion", o.Webhook.ConversionServiceName)
	assert.Equal(t, "sidecarset-controller-webhook", o.Webhook.ServiceName, "admission keeps its Service")
	assert.Contains(t, o.Webhook.CertPolicy().DNSNames, "sidecarset-controller-conversion."+o.Webhook.Namespace+".svc")
}
