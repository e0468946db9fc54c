package expectations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Node remembers, per owner key K and node, a pod the controller created that its cache has not shown yet,
// so a sync running on a stale cache does not create a second pod on that node (BroadcastJob, Advanced
// DaemonSet: one pod per node). Unlike Scale, one pending node does not hold the owner's other nodes back.
// An entry ends when the pod is observed (informer event or cache lookup by name) or when it expires: an event
// lost for good then delays the node by at most the timeout instead of wedging it. The zero value is not
// usable; call NewNode.
type Node[K comparable] struct {
	mu     sync.Mutex
	opts   options
	owners map[K]*nodeCreates
}

type nodeCreates struct {
	uid   types.UID
	nodes map[string]pendingCreate
}

type pendingCreate struct {
	pod      string // name of the created pod; "" when the create's outcome is unknown (e.g. a timeout)
	deadline time.Time
}

// NewNode returns an empty store.
func NewNode[K comparable](opts ...Option) *Node[K] {
	return &Node[K]{opts: newOptions(opts), owners: map[K]*nodeCreates{}}
}

// Timeout is how long an unobserved create blocks its node.
func (e *Node[K]) Timeout() time.Duration { return e.opts.timeout }

// Expect records a create on node for owner (key, uid). pod may be "" if the create's outcome is unknown.
func (e *Node[K]) Expect(key K, uid types.UID, node, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	o := e.owners[key]
	if o == nil || o.uid != uid {
		o = &nodeCreates{uid: uid, nodes: map[string]pendingCreate{}}
		e.owners[key] = o
	}
	o.nodes[node] = pendingCreate{pod: pod, deadline: e.opts.clock.Now().Add(e.opts.timeout)}
}

// Observed drops the expectation satisfied by pod (a pod of owner key targeting node). A create of unknown
// outcome is satisfied by any pod on its node.
func (e *Node[K]) Observed(key K, node, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if o := e.owners[key]; o != nil {
		if p, ok := o.nodes[node]; ok && (p.pod == "" || p.pod == pod) {
			delete(o.nodes, node)
		}
	}
}

// Pending returns the nodes of owner (key, uid) that still wait for their pod, after dropping expectations
// that expired or whose pod inCache reports, and how long until the earliest remaining one expires (0 if none).
func (e *Node[K]) Pending(key K, uid types.UID, inCache func(pod string) bool) (sets.Set[string], time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := sets.New[string]()
	o := e.owners[key]
	if o == nil {
		return out, 0
	}
	if o.uid != uid {
		delete(e.owners, key)
		return out, 0
	}
	now := e.opts.clock.Now()
	var next time.Duration
	for node, p := range o.nodes {
		if !now.Before(p.deadline) || (p.pod != "" && inCache(p.pod)) {
			delete(o.nodes, node)
			continue
		}
		out.Insert(node)
		if left := p.deadline.Sub(now); next == 0 || left < next {
			next = left
		}
	}
	if len(o.nodes) == 0 {
		delete(e.owners, key)
	}
	return out, next
}

// Forget drops everything about owner key (it was deleted).
func (e *Node[K]) Forget(key K) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.owners, key)
}
