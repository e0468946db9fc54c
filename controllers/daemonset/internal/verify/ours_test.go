package verify

import "github.com/flotilla-dev/flotilla/controllers/daemonset/internal/controller/controllertest"

// startOurs runs the Advanced DaemonSet reconciler in-process over h's
// namespace (and the cluster's nodes) and returns a function stopping it.
func startOurs(h *harness) (stop func()) {
	h.t.Helper()
	return controllertest.Start(h.t, h.env, h.ns, controllertest.Options{}).Stop
}
