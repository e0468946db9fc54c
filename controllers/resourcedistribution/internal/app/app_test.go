package app

import (
	"testing"

	"github.com/flotilla-dev/flotilla/kit/app/apptest"
	"github.com/flotilla-dev/flotilla/kit/features"
)

// TestBinary: the shell's checks, and the gate keeps OpenKruise's default (off) until --feature-gates turns it on.
func TestBinary(t *testing.T) {
	apptest.CheckBinary(t, Binary)
	apptest.CheckGateOffByDefault(t, Binary, features.ResourceDistributionGate)
}
