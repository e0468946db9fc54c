package app

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/apptest"
	"github.com/flotilla-dev/flotilla/kit/features"
)

// TestBinary: the shell's checks, and the gate keeps OpenKruise's default (off) until --feature-gates turns it on.
func TestBinary(t *testing.T) {
	apptest.CheckBinary(t, Binary)
	p, err := kitapp.Parse(Binary(), nil, io.Discard)
	require.NoError(t, err)
	assert.False(t, p.Gates.Enabled(features.ResourceDistributionGate), "off by default, as in OpenKruise")
	p, err = kitapp.Parse(Binary(), []string{"--feature-gates=ResourceDistributionGate=true"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, p.Gates.Enabled(features.ResourceDistributionGate))
}
