package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// invariantWatcher checks, at every pod event of one set, that no more than
// maxInTransition pods are in transition — terminating, or created and not
// yet Ready — and that every pod's ordinal is below replicas. A pod that was
// Ready and turns NotReady later (its node missed heartbeats on a loaded
// machine) is the node's doing, not the controller's, and does not count;
// pods that existed before the watch started are taken as settled.
type invariantWatcher struct {
	mu              sync.Mutex
	maxInTransition int
	replicas        int
	pods            map[string]*corev1.Pod
	seen, wasReady  map[types.UID]bool
	peak            int
	violations      []string
}

func (h *harness) watchInvariants(name string, replicas, maxInTransition int) *invariantWatcher {
	w := &invariantWatcher{maxInTransition: maxInTransition, replicas: replicas, pods: map[string]*corev1.Pod{},
		seen: map[types.UID]bool{}, wasReady: map[types.UID]bool{}}
	h.onPodEvents(name, w.observe)
	return w
}

func (w *invariantWatcher) observe(t watch.EventType, p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t != watch.Added && !w.seen[p.UID] {
		w.wasReady[p.UID] = true // existed, settled, before the watch
	}
	w.seen[p.UID] = true
	if podReady(p) {
		w.wasReady[p.UID] = true
	}
	if t == watch.Deleted {
		delete(w.pods, p.Name)
	} else {
		w.pods[p.Name] = p
	}
	if ordinal(p.Name) >= w.replicas {
		w.violations = append(w.violations, fmt.Sprintf("pod %s outside the %d slots", p.Name, w.replicas))
	}
	var transit []string
	for n, q := range w.pods {
		if q.DeletionTimestamp != nil || !w.wasReady[q.UID] {
			transit = append(transit, n)
		}
	}
	w.peak = max(w.peak, len(transit))
	if len(transit) > w.maxInTransition {
		w.violations = append(w.violations, fmt.Sprintf("%d pods in transition at once: %s", len(transit), strings.Join(transit, ",")))
	}
}

// waitCaughtUp polls until the watcher has observed exactly the pods the API
// server lists now, so a final check sees every event up to the end state.
func (w *invariantWatcher) waitCaughtUp(h *harness, name string) {
	h.T.Helper()
	h.WaitCaughtUp("app="+name, &w.mu, func() map[string]*corev1.Pod { return w.pods })
}

func (w *invariantWatcher) maxSeen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

func (w *invariantWatcher) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.violations)
}

// crashLoop kills the controller (its context cancelled, in-flight requests
// aborted, caches, expectations and queue discarded) once progress reaches
// each threshold, and starts a fresh one.
func (h *harness) crashLoop(name string, stop *func(), thresholds []int, progress func([]corev1.Pod) int) {
	h.T.Helper()
	for _, n := range thresholds {
		h.KillWhen(fmt.Sprintf("at progress %d", n), func() bool { return progress(h.pods(name)) >= n }, stop, h.startController)
	}
}

func onImage(image string) func([]corev1.Pod) int {
	return func(ps []corev1.Pod) int {
		n := 0
		for _, p := range ps {
			if p.Spec.Containers[0].Image == image && podReady(&p) {
				n++
			}
		}
		return n
	}
}

// TestCrashSafetyOrderedReady: killed and restarted during the ordered
// scale-up and the rolling update; never two pods in transition, no pod
// outside the slots, and both complete.
func TestCrashSafetyOrderedReady(t *testing.T) {
	const replicas = 5
	h := newHarness(t)
	w := h.watchInvariants("oc", replicas, 1)
	stop := h.startController()
	h.create(newSet("oc", replicas))
	h.crashLoop("oc", &stop, []int{2, 4}, func(ps []corev1.Pod) int { return len(ps) })
	h.waitStatus("oc", "settled", settled(replicas))
	h.modify("oc", setImage(imageV2))
	h.crashLoop("oc", &stop, []int{1, 3}, onImage(imageV2))
	h.waitStatus("oc", "settled on v2", settled(replicas))
	assert.Equal(t, replicas, onImage(imageV2)(h.pods("oc")))
	w.waitCaughtUp(h, "oc")
	w.check(t)
}

// TestCrashSafetyParallel: the same for a Parallel rollout with
// rollingUpdate.maxUnavailable 2: never more than two pods unavailable.
func TestCrashSafetyParallel(t *testing.T) {
	const replicas = 6
	h := newHarness(t)
	stop := h.startController()
	two := intstr.FromInt32(2)
	h.create(newSet("pc", replicas, parallel, rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.MaxUnavailable = &two })))
	h.waitStatus("pc", "settled", settled(replicas))
	w := h.watchInvariants("pc", replicas, 2)
	h.modify("pc", setImage(imageV2))
	h.crashLoop("pc", &stop, []int{2, 4}, onImage(imageV2))
	h.waitStatus("pc", "settled on v2", settled(replicas))
	w.waitCaughtUp(h, "pc")
	w.check(t)
	assert.Equal(t, 2, w.maxSeen(), "the budget was used")
}
