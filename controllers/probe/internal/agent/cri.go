package agent

import (
	"context"
	"fmt"
	"time"

	criremote "k8s.io/cri-client/pkg"
)

// NewCRIExecer connects to the node's CRI runtime at endpoint (for example
// unix:///run/containerd/containerd.sock) and returns its ExecSync.
func NewCRIExecer(ctx context.Context, endpoint string) (Execer, error) {
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
