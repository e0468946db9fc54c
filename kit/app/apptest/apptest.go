// Package apptest checks a binary's kit/app wiring the same way for every controller: it parses with the
// defaults, names its Lease after itself, accepts each of its own feature gates and rejects unknown ones.
package apptest

import (
	"io"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/featuregate"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/shell"
)

// CheckBinary runs the checks against newBinary (called once per parse, as main does).
func CheckBinary(t *testing.T, newBinary func() kitapp.Binary) {
	t.Helper()
	t.Setenv("POD_NAMESPACE", "")
	b := newBinary()
	p := checkGates(t, b.Name, b.Gates, func() func(*pflag.FlagSet) { return newBinary().AddFlags })
	assert.Equal(t, b.Name, p.Options.LeaseName, "the Lease is named after the binary")
	assert.Equal(t, kitapp.DefaultLeaseNamespace, p.Options.LeaseNamespace)
}

// CheckGateOffByDefault checks that gate, one of newBinary's, keeps its default (off: the binary runs nothing)
// until --feature-gates turns it on.
func CheckGateOffByDefault(t *testing.T, newBinary func() kitapp.Binary, gate featuregate.Feature) {
	t.Helper()
	p, err := kitapp.Parse(newBinary(), nil, io.Discard)
	require.NoError(t, err)
	assert.False(t, p.Gates.Enabled(gate), "%s off by default", gate)
	p, err = kitapp.Parse(newBinary(), []string{"--feature-gates=" + string(gate) + "=true"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, p.Gates.Enabled(gate), "%s=true turns it on", gate)
}

// CheckShellBinary is CheckBinary for a binary on kit/app/shell (the node agent): no Lease, leader election
// off by default.
func CheckShellBinary(t *testing.T, newBinary func() shell.Binary) {
	t.Helper()
	b := newBinary()
	p := checkGates(t, b.Name, b.Gates, func() func(*pflag.FlagSet) { return newBinary().AddFlags })
	assert.False(t, p.Options.LeaderElect, "a shell binary has no leader election")
}

// checkGates parses with the defaults, with each gate on, and with an unknown gate; it returns the default
// parse. addFlags gives a fresh binary's flags per parse.
func checkGates(t *testing.T, name string, gates []featuregate.Feature, addFlags func() func(*pflag.FlagSet)) *shell.Parsed {
	t.Helper()
	p, err := shell.Parse(name, gates, addFlags(), nil, io.Discard)
	require.NoError(t, err)
	for _, g := range gates {
		_, err := shell.Parse(name, gates, addFlags(), []string{"--feature-gates=" + string(g) + "=true"}, io.Discard)
		assert.NoError(t, err, "gate %s is accepted", g)
	}
	_, err = shell.Parse(name, gates, addFlags(), []string{"--feature-gates=NotAGate=true"}, io.Discard)
	assert.Error(t, err, "a gate the binary does not register is rejected")
	return p
}
