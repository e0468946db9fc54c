// Package install installs Flotilla into the local control plane the way an operator does: images built by
// `make images` and pushed to the registry the real node pulls from, `kubectl apply --server-side -k` of the
// namespace, CRD and feature overlays (pinned to those images by a kustomization of the operator's own, as README
// "Installing into a cluster" shows), the controllers running as pods on the real node under the overlays'
// ServiceAccounts, RBAC, probes and security context, webhooks called by the API server through their Services.
//
// The controllers it installs watch every namespace, so the package runs alone, after every other package:
// `make test` runs it last with FLOTILLA_E2E_INSTALL=1 (REAL_NODES=1); without that variable it skips.
package install

import (
	"testing"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
