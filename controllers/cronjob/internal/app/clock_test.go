//go:build !e2eclock

package app

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// The clock of a release binary cannot be moved: --clock-offset exists only
// in the e2eclock build test/e2e/cronjob makes.
func TestReleaseBinaryHasNoClockOffset(t *testing.T) {
	_, err := kitapp.Parse(Binary(), []string{"--clock-offset=90s"}, io.Discard)
	require.ErrorContains(t, err, "clock-offset")
}
