package app

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/apptest"
)

func TestBinary(t *testing.T) {
	apptest.CheckBinary(t, Binary)
	_, err := kitapp.Parse(Binary(), []string{"--enable-advancedcronjob=false", "--enable-broadcastjob=false", "--clock-offset=90s"}, io.Discard)
	require.NoError(t, err, "the binary's own flags parse")
}

// The offset moves "now" and nothing else: durations and timers are the real clock's.
func TestOffsetClock(t *testing.T) {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	fake := clocktesting.NewFakeClock(base)
	c := offsetClock{WithTicker: fake, offset: 55 * time.Second}
	assert.Equal(t, base.Add(55*time.Second), c.Now())
	assert.Equal(t, 55*time.Second, c.Since(base))
	fake.Step(time.Second)
	assert.Equal(t, base.Add(56*time.Second), c.Now())
}
