package verify

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// podWatch follows one DaemonSet's pods from a watch: it records, per node,
// the order in which pods were created, became Ready and were deleted
// ("+<hash>", "ready <hash>", "-<hash>"), and, while limits are set, checks
// at every event of a rolling update with budgets maxSurge and
// maxUnavailable that no node holds more than one pod, or two when surging
// (terminating ones included: they still run); that no more than maxSurge
// nodes hold two pods not being deleted; and that no more than
// maxUnavailable of the watched nodes lack an available pod.
type podWatch struct {
	mu    sync.Mutex
	pods  map[types.UID]*corev1.Pod // current state of every pod not yet deleted
	ready map[types.UID]bool        // seen Ready once: a pod the kwok node later reports NotReady is the node's doing
	gone  map[types.UID]bool
	ops   map[string][]string     // node → operations
	owner map[types.UID]types.UID // pod → last controller UID seen
	n     int                     // number of operations recorded

	limits                   bool
	nodes                    []string
	maxSurge, maxUnav        int
	peakPerNode, peakSurging int
	peakUn                   int
	violations               []string
}

func (h *harness) watchPods(app string) *podWatch {
	h.T.Helper()
	initial, w := h.WatchPods("app=" + app)
	pw := &podWatch{pods: map[types.UID]*corev1.Pod{}, ready: map[types.UID]bool{}, gone: map[types.UID]bool{}, ops: map[string][]string{}, owner: map[types.UID]types.UID{}}
	for i := range initial {
		p := &initial[i]
		pw.pods[p.UID] = p
		pw.ready[p.UID] = testenv.PodReady(p)
		pw.gone[p.UID] = p.DeletionTimestamp != nil
	}
	lab.ObservePods(w, pw.observe)
	return pw
}

func (w *podWatch) observe(t watch.EventType, p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	node := nodeplacement.TargetNode(p)
	hash := p.Labels[revisionHashLabel]
	if ref := metav1.GetControllerOf(p); ref != nil {
		w.owner[p.UID] = ref.UID
	}
	rec := func(op string) {
		w.ops[node] = append(w.ops[node], op+hash)
		w.n++
	}
	if _, known := w.pods[p.UID]; !known && !w.gone[p.UID] {
		rec("+")
	}
	switch {
	case t == watch.Deleted || p.DeletionTimestamp != nil:
		if !w.gone[p.UID] {
			w.gone[p.UID] = true
			rec("-")
		}
	case testenv.PodReady(p) && !w.ready[p.UID]:
		w.ready[p.UID] = true
		rec("ready ")
	}
	if t == watch.Deleted {
		delete(w.pods, p.UID)
	} else {
		w.pods[p.UID] = p
	}
	if w.limits {
		w.check()
	}
}

// check evaluates the limits on the current state (mu held).
func (w *podWatch) check() {
	perNode := map[string][]string{}
	live := map[string]int{}
	available := map[string]bool{}
	for uid, p := range w.pods {
		n := nodeplacement.TargetNode(p)
		perNode[n] = append(perNode[n], p.Name)
		if !w.gone[uid] {
			live[n]++
			if w.ready[uid] {
				available[n] = true
			}
		}
	}
	maxPerNode := 1 + min(w.maxSurge, 1)
	for n, names := range perNode {
		w.peakPerNode = max(w.peakPerNode, len(names))
		if len(names) > maxPerNode {
			sort.Strings(names)
			w.violations = append(w.violations, fmt.Sprintf("%d pods on node %s: %s", len(names), n, strings.Join(names, ",")))
		}
	}
	var surging []string
	for n, c := range live {
		if c > 1 {
			surging = append(surging, n)
		}
	}
	w.peakSurging = max(w.peakSurging, len(surging))
	if len(surging) > w.maxSurge {
		sort.Strings(surging)
		w.violations = append(w.violations, fmt.Sprintf("%d nodes with two pods: %s", len(surging), strings.Join(surging, ",")))
	}
	var unavailable []string
	for _, n := range w.nodes {
		if !available[n] {
			unavailable = append(unavailable, n)
		}
	}
	w.peakUn = max(w.peakUn, len(unavailable))
	if len(unavailable) > w.maxUnav {
		w.violations = append(w.violations, fmt.Sprintf("%d nodes without an available pod: %s", len(unavailable), strings.Join(unavailable, ",")))
	}
}

// enforce waits until the watch has caught up with the API server, then
// starts checking the budgets of a rolling update, the unavailability over
// nodes (and resets the peaks).
//
// The wait matters: a caller usually enforces right after it saw, through a
// List, every pod Ready; a watch that lags (under load the API server even
// closes it and it resumes) has not seen some of those Ready events yet and
// would count their nodes as unavailable, a violation no controller caused.
// Once caught up, the watch sees a controller's decisions after the events
// they were based on (one watch delivers events in resourceVersion order).
func (w *podWatch) enforce(h *harness, app string, nodes []string, maxSurge, maxUnavailable int) {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) { err := w.caughtUp(h, app); return err == nil, err })
	w.startChecks(nodes, maxSurge, maxUnavailable)
}

// startChecks starts checking the budgets on the watch's current state.
func (w *podWatch) startChecks(nodes []string, maxSurge, maxUnavailable int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.limits, w.nodes, w.maxSurge, w.maxUnav = true, nodes, maxSurge, maxUnavailable
	w.peakPerNode, w.peakSurging, w.peakUn = 0, 0, 0
	w.check()
}

// peaks are the highest counts seen while the budgets were checked.
type peaks struct{ perNode, surging, unavailable int }

func (p peaks) String() string {
	return fmt.Sprintf("peak pods per node %d, peak nodes with two pods %d, peak unavailable %d", p.perNode, p.surging, p.unavailable)
}

// relax stops checking the budgets and returns the peaks seen while they
// were checked and the violations.
func (w *podWatch) relax() (peaks, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.limits = false
	v := w.violations
	w.violations = nil
	return peaks{w.peakPerNode, w.peakSurging, w.peakUn}, v
}

// caughtUp reports (as an error) whether the watch has seen exactly the pods
// the API server lists now, at their current resourceVersions.
func (w *podWatch) caughtUp(h *harness, app string) error {
	list, err := h.Env.Kube.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pods) != len(list.Items) {
		return fmt.Errorf("the watch has %d pods, the API server %d", len(w.pods), len(list.Items))
	}
	for _, p := range list.Items {
		if q := w.pods[p.UID]; q == nil || q.ResourceVersion != p.ResourceVersion {
			return fmt.Errorf("the watch is behind on pod %s", p.Name)
		}
	}
	return nil
}

// opCount is the number of operations recorded so far.
func (w *podWatch) opCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// opsSince returns, per node, the operations recorded after the first
// skip[node] ones, with hashes replaced by revision numbers and nodes by
// their index in names; and the new skip.
func (w *podWatch) opsSince(skip map[string]int, revs map[string]int64, names []string) (map[string]string, map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	next := map[string]int{}
	for node, ops := range w.ops {
		next[node] = len(ops)
		var parts []string
		for _, op := range ops[skip[node]:] {
			for hash, rev := range revs {
				if hash != "" && strings.HasSuffix(op, hash) {
					op = strings.TrimSuffix(op, hash) + fmt.Sprintf("r%d", rev)
					break
				}
			}
			parts = append(parts, op)
		}
		if len(parts) > 0 {
			out[shortNode(names, node)] = strings.Join(parts, ", ")
		}
	}
	return out, next
}

// controller is the last controller UID the watch saw on a pod.
func (w *podWatch) controller(pod types.UID) types.UID {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.owner[pod]
}
