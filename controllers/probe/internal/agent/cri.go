package agent

import (
	"context"

	"github.com/flotilla-dev/flotilla/kit/node/cri"
)

// NewCRIExecer connects to the node's CRI runtime at endpoint (for example
// unix:///run/containerd/containerd.sock) and returns its ExecSync.
func NewCRIExecer(ctx context.Context, endpoint string) (Execer, error) {
	return cri.Connect(ctx, endpoint)
}
