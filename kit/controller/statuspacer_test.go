package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestStatusPacer(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := StatusPacer[string]{Interval: time.Second}
	assert.Zero(t, p.Wait("a", now), "never written: at once")
	p.Wrote("a", now)
	assert.Equal(t, 700*time.Millisecond, p.Wait("a", now.Add(300*time.Millisecond)))
	assert.Zero(t, p.Wait("b", now), "keys are independent")
	assert.Zero(t, p.Wait("a", now.Add(time.Second)))
	p.Forget("a")
	assert.Zero(t, p.Wait("a", now.Add(time.Millisecond)))
}
