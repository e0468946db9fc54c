//go:build e2eclock

package app

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

func TestClockOffsetFlag(t *testing.T) {
	_, err := kitapp.Parse(Binary(), []string{"--clock-offset=90s"}, io.Discard)
	require.NoError(t, err)
}

// The offset moves "now" and nothing else: durations and timers are the real clock's.
func TestOffsetClock(t *testing.T) {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	fake := clocktesting.NewFakeClock(base)
	c := (&clockOptions{offset: 55 * time.Second}).wrap(fake)
	assert.Equal(t, base.Add(55*time.Second), c.Now())
	assert.Equal(t, 55*time.Second, c.Since(base))
	fake.Step(time.Second)
	assert.Equal(t, base.Add(56*time.Second), c.Now())
}
