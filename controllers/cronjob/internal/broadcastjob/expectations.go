package broadcastjob

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// createExpectations remembers, per job and node, a pod this controller created that its cache has not shown
// yet, so a sync running on a stale cache does not create a second pod on that node. An entry ends when the pod
// is observed (informer event or cache lookup by name) or when it expires: an event lost for good then delays
// the node by at most ttl instead of wedging it.
//
// TODO: move to kit/ (DESIGN §3 `expectations`) once a second controller needs it.
type createExpectations struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	ttl   time.Duration
	jobs  map[types.NamespacedName]*jobCreates
}

type jobCreates struct {
	uid   types.UID
	nodes map[string]pendingCreate
}

type pendingCreate struct {
	pod      string // name of the created pod; "" when the create's outcome is unknown (e.g. a timeout)
	deadline time.Time
}

func newCreateExpectations(c clock.PassiveClock, ttl time.Duration) *createExpectations {
	return &createExpectations{clock: c, ttl: ttl, jobs: map[types.NamespacedName]*jobCreates{}}
}

// expect records a create for node of job (key, uid). pod may be "" if the create's outcome is unknown.
func (e *createExpectations) expect(key types.NamespacedName, uid types.UID, node, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.jobs[key]
	if j == nil || j.uid != uid {
		j = &jobCreates{uid: uid, nodes: map[string]pendingCreate{}}
		e.jobs[key] = j
	}
	j.nodes[node] = pendingCreate{pod: pod, deadline: e.clock.Now().Add(e.ttl)}
}

// observed drops the expectation satisfied by pod (a pod of job key targeting node).
func (e *createExpectations) observed(key types.NamespacedName, node, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j := e.jobs[key]; j != nil {
		if p, ok := j.nodes[node]; ok && (p.pod == "" || p.pod == pod) {
			delete(j.nodes, node)
		}
	}
}

// pending returns the nodes of job (key, uid) that still wait for their pod, after dropping expectations that
// expired or whose pod inCache reports, and how long until the earliest remaining one expires (0 if none).
func (e *createExpectations) pending(key types.NamespacedName, uid types.UID, inCache func(pod string) bool) (sets.Set[string], time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := sets.New[string]()
	j := e.jobs[key]
	if j == nil {
		return out, 0
	}
	if j.uid != uid {
		delete(e.jobs, key)
		return out, 0
	}
	now := e.clock.Now()
	var next time.Duration
	for node, p := range j.nodes {
		if !now.Before(p.deadline) || (p.pod != "" && inCache(p.pod)) {
			delete(j.nodes, node)
			continue
		}
		out.Insert(node)
		if left := p.deadline.Sub(now); next == 0 || left < next {
			next = left
		}
	}
	if len(j.nodes) == 0 {
		delete(e.jobs, key)
	}
	return out, next
}

// forget drops everything about job key (it was deleted).
func (e *createExpectations) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.jobs, key)
}
