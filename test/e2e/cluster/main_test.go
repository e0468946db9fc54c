// Package cluster tests the local control plane itself (hack/cluster): that kwok's simulated
// kubelet, the PV provisioner and URL admission webhooks behave as the controllers of this
// repository expect. Run against a shared cluster with FLOTILLA_KUBECONFIG=<repo>/.cluster/kubeconfig,
// or without it to get a private one (see kit/testenv).
package cluster

import (
	"testing"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
