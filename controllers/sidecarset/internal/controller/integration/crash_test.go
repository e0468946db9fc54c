package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Item 6: the controller is killed (context cancelled mid-sync, caches,
// expectations and queue discarded) three times during an in-place rollout
// of 10 pods with maxUnavailable 2, and a fresh one started each time. A
// watcher checks at every pod event that pods on the new version but not yet
// available (kubelet not on the new image, or not ready) never exceed 2, that
// no pod is deleted or recreated, and the rollout completes.
func TestCrashSafety(t *testing.T) {
	const replicas, maxUnavailable = 10, 2
	h := newHarness(t)
	stop := h.startController()
	h.createSet(h.newSet("crash", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(maxUnavailable))
	}))
	h.createPods("crash", replicas, nil, nil)
	before := h.waitPods("crash", "10 ready", allReady(replicas))
	h.waitStatus("crash", "10 ready", func(s appsv1alpha1.SidecarSetStatus) bool { return s.ReadyPods == replicas })

	w := h.watchInvariants("crash", maxUnavailable)
	set := h.sets.Modify(h.setName("crash"), setImage("side", sideV2))
	w.setTarget(set)

	restarts := 0
	for _, n := range []int{2, 5, 8} {
		testenv.Eventually(t, waitTimeout, func() (bool, error) { return countOn(h.pods("crash"), "side", sideV2) >= n, nil })
		stop()
		restarts++
		t.Logf("killed the controller with %d pods on v2 or more, restart %d", n, restarts)
		stop = h.startController()
	}
	after := h.waitPods("crash", "all on v2", allOn(replicas, "side", sideV2))
	h.waitStatus("crash", "settled", func(s appsv1alpha1.SidecarSetStatus) bool {
		return s.UpdatedPods == replicas && s.UpdatedReadyPods == replicas
	})
	w.waitCaughtUp(h, "crash")
	w.check(t)
	assert.Equal(t, testenv.PodUIDs(before), testenv.PodUIDs(after), "no pod recreated")
	assert.Equal(t, 3, restarts)
}

type watcher struct {
	mu             sync.Mutex
	maxUnavailable int
	set            *appsv1alpha1.SidecarSet
	live           map[string]*corev1.Pod
	peak           int
	events         int
	violations     []string
}

func (h *harness) watchInvariants(name string, maxUnavailable int) *watcher {
	h.T.Helper()
	w := &watcher{maxUnavailable: maxUnavailable, live: map[string]*corev1.Pod{}}
	f := informers.NewSharedInformerFactoryWithOptions(h.Env.Kube, 0, informers.WithNamespace(h.NS),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = labels.Set{"app": name}.String() }))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.observe("add", o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { w.observe("update", o.(*corev1.Pod)) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				w.observe("delete", p)
			}
		},
	})
	require.NoError(h.T, err)
	stop := make(chan struct{})
	f.Start(stop)
	f.WaitForCacheSync(stop)
	h.T.Cleanup(func() { close(stop); f.Shutdown() })
	return w
}

func (w *watcher) setTarget(set *appsv1alpha1.SidecarSet) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.set = set
}

func (w *watcher) observe(event string, p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	if event == "delete" || p.DeletionTimestamp != nil {
		w.violations = append(w.violations, fmt.Sprintf("pod %s deleted", p.Name))
		delete(w.live, p.Name)
		return
	}
	w.live[p.Name] = p
	if w.set == nil {
		return
	}
	unavailable := 0
	for _, q := range w.live {
		if sidecarcontrol.IsUpdated(q, w.set) && !(sidecarcontrol.Consistent(q, w.set) && sidecarcontrol.Ready(q, w.set)) {
			unavailable++
		}
	}
	w.peak = max(w.peak, unavailable)
	if unavailable > w.maxUnavailable {
		w.violations = append(w.violations, fmt.Sprintf("%s %s: %d updated pods unavailable > %d", event, p.Name, unavailable, w.maxUnavailable))
	}
}

// waitCaughtUp polls until the watcher has seen exactly the pods the API
// server lists now, at their current resourceVersions.
func (w *watcher) waitCaughtUp(h *harness, name string) {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		list, err := h.Env.Kube.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(list.Items) != len(w.live) {
			return false, nil
		}
		for _, p := range list.Items {
			if q := w.live[p.Name]; q == nil || q.ResourceVersion != p.ResourceVersion {
				return false, nil
			}
		}
		return true, nil
	})
}

func (w *watcher) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.violations)
	assert.Positive(t, w.peak, "the watcher saw the rollout in flight")
	t.Logf("watcher: %d events, peak %d updated-unavailable pods", w.events, w.peak)
}
