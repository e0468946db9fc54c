// Package cri is the node agent's one client of the node's CRI runtime service (k8s.io/cri-client), shared by
// its workers: exec probes (ExecSync) and ContainerRecreateRequests (ListContainers, ExecSync for a preStop,
// StopContainer).
package cri

import (
	"context"
	"fmt"
	"time"

	criapi "k8s.io/cri-api/pkg/apis"
	criremote "k8s.io/cri-client/pkg"
)

// Connect connects to the CRI runtime at endpoint (for example unix:///run/containerd/containerd.sock); the
// runtime must answer Version.
func Connect(ctx context.Context, endpoint string) (criapi.RuntimeService, error) {
	rs, err := criremote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(10 * time.Second).
		WithTracerProvider(nil).
		Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to CRI runtime %s: %w", endpoint, err)
	}
	return rs, nil
}
