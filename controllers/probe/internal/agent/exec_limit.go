package agent

import (
	"context"
	"errors"
	"time"
)

// DefaultMaxConcurrentExecs is the default of probe-agent's
// --max-concurrent-execs.
const DefaultMaxConcurrentExecs = 8

// errExecBusy: no exec slot came free within the probe's timeout.
var errExecBusy = errors.New("too many exec probes running on this node")

// execProbeSkipped is the result of an attempt that did not run: the worker
// observes nothing and keeps its state (no claim it could not observe).
const execProbeSkipped = ""

// limitedExecer lets at most cap(slots) ExecSync calls run at once on the
// node. Every exec probe is a process the runtime starts in a container
// (runc exec: a fork, a cgroup join, the command itself); PodProbeMarker
// authors choose how many and how often, and the kubelet's own probes are
// not counted against them. Without a cap one namespace's markers can keep
// the node's runtime and CPU busy for every other tenant.
type limitedExecer struct {
	next  Execer
	slots chan struct{}
}

// limitExecs wraps exec so that at most n of its calls run at once; n ≤ 0
// or a nil exec leaves it as is.
func limitExecs(exec Execer, n int) Execer {
	if exec == nil || n <= 0 {
		return exec
	}
	return &limitedExecer{next: exec, slots: make(chan struct{}, n)}
}

// ExecSync waits for a slot until ctx ends (the probe's timeout): a probe
// that cannot start in its own time budget is skipped, not failed.
func (l *limitedExecer) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, errExecBusy
	}
	defer func() { <-l.slots }()
	return l.next.ExecSync(ctx, containerID, cmd, timeout)
}
