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

// TestBinary: the shell's checks, and KruiseDaemon (what the reconciler needs, a node agent) keeps its default
// (off) until --feature-gates turns it on.
func TestBinary(t *testing.T) {
	apptest.CheckBinary(t, Binary)
	p, err := kitapp.Parse(Binary(), nil, io.Discard)
	require.NoError(t, err)
	assert.False(t, p.Gates.Enabled(features.KruiseDaemon), "off by default")
	p, err = kitapp.Parse(Binary(), []string{"--feature-gates=KruiseDaemon=true"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, p.Gates.Enabled(features.KruiseDaemon))
}
