package app

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

func TestBinaryParses(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	p, err := kitapp.Parse(Binary(), nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, Name, p.Options.LeaseName)
	assert.Equal(t, kitapp.DefaultLeaseNamespace, p.Options.LeaseNamespace)
	for _, g := range Gates() {
		_, err := kitapp.Parse(Binary(), []string{"--feature-gates=" + string(g) + "=true"}, io.Discard)
		assert.NoError(t, err, "gate %s is accepted", g)
	}
	_, err = kitapp.Parse(Binary(), []string{"--feature-gates=NotAGate=true"}, io.Discard)
	assert.Error(t, err)
}
