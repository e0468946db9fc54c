package app

import (
	"testing"

	"github.com/stretchr/testify/assert"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/apptest"
)

func TestBinary(t *testing.T) {
	apptest.CheckBinary(t, Binary)
	if len(Gates()) == 0 {
		t.Fatal("sidecarset-controller registers its feature gates")
	}
}

// Revisions and the whitelist live in the controller's namespace, wherever
// the Lease is (the fleet e2e test moves the Lease to its own namespace,
// where the RBAC grants no revisions: the webhook never became ready).
func TestSystemNamespace(t *testing.T) {
	env := &kitapp.Env{Options: kitapp.Options{LeaseNamespace: "elsewhere"}}
	t.Setenv("POD_NAMESPACE", "")
	assert.Equal(t, "flotilla-system", SystemNamespace(env))
	t.Setenv("POD_NAMESPACE", "mine")
	assert.Equal(t, "mine", SystemNamespace(env))
}
