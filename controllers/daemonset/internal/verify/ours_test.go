package verify

import (
	"github.com/stretchr/testify/require"

	"github.com/flotilla-dev/flotilla/controllers/daemonset/internal/app"
	"github.com/flotilla-dev/flotilla/controllers/daemonset/internal/controller"
)

// startOurs runs the Advanced DaemonSet reconciler in-process over h's
// namespace (and the cluster's nodes) with the binary's defaults and returns
// a function stopping it (also done at cleanup).
func startOurs(h *harness) (stop func()) {
	h.T.Helper()
	d := h.Deps("daemonset-test", h.Gates(app.Gates(), nil))
	c, err := controller.New(d)
	require.NoError(h.T, err)
	return h.Start(c, 2, d)
}
