package app

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegisterCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	n := 3.0
	require.NoError(t, RegisterCounters(reg, Counter{Name: "x_total", Help: "x", Value: func() float64 { return n }}))
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, 1)
	assert.Equal(t, "x_total", families[0].GetName())
	assert.Equal(t, 3.0, families[0].GetMetric()[0].GetCounter().GetValue())
	assert.ErrorContains(t, RegisterCounters(reg, Counter{Name: "x_total", Help: "x", Value: func() float64 { return 0 }}), "register x_total")
}
