// Package realnode runs Flotilla's controllers against a real kubelet: pods pinned to the real node(s) that
// `REAL_NODES=1 hack/cluster/up.sh` adds beside the kwok nodes (kubelet + containerd + runc, images pulled
// from the local registry). What kwok's stages only imitate is checked here against the real thing:
// in-place image updates restart exactly the changed container, and the InPlaceUpdateReady readiness gate,
// flipped by the controller, makes the kubelet report the pod NotReady and Ready again. PodProbeMarker's exec probes
// run in the pod's container through the node's containerd (probe-agent's CRI client), and the seed's game-server
// scenario scales a CloneSet in by the pod-deletion-cost those probes set (probe_test.go).
//
// Each test runs its scenario on the real node and on the kwok nodes (subtests "real" and "kwok") and asserts what
// must hold on both, so the kwok stages are held to what the kubelet does (hack/cluster/README.md, "What the real
// kubelet does differently from the kwok stages"). Without a real node only the kwok subtests run, unless
// FLOTILLA_REAL_NODES is set and not 0 (make test sets it): then the tests fail.
package realnode

import (
	"testing"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
