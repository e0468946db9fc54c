// Package apptest checks a binary's kit/app wiring the same way for every controller: it parses with the
// defaults, names its Lease after itself, accepts each of its own feature gates and rejects unknown ones.
package apptest

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// CheckBinary runs the checks against newBinary (called once per parse, as main does).
func CheckBinary(t *testing.T, newBinary func() kitapp.Binary) {
	t.Helper()
	t.Setenv("POD_NAMESPACE", "")
	b := newBinary()
	p, err := kitapp.Parse(b, nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, b.Name, p.Options.LeaseName, "the Lease is named after the binary")
	assert.Equal(t, kitapp.DefaultLeaseNamespace, p.Options.LeaseNamespace)
	for _, g := range b.Gates {
		_, err := kitapp.Parse(newBinary(), []string{"--feature-gates=" + string(g) + "=true"}, io.Discard)
		assert.NoError(t, err, "gate %s is accepted", g)
	}
	_, err = kitapp.Parse(newBinary(), []string{"--feature-gates=NotAGate=true"}, io.Discard)
	assert.Error(t, err, "a gate the binary does not register is rejected")
}
