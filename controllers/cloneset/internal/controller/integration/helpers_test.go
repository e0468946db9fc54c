package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// unreadyAnnotation makes kwok report the listed containers not ready
// (hack/cluster/README.md).
const unreadyAnnotation = "sim.kwok.x-k8s.io/unready-containers"

// withVolume adds a volumeClaimTemplate "data" mounted by the container.
func withVolume(cs *appsv1alpha1.CloneSet) {
	lab.SetDataClaim(&cs.Spec.VolumeClaimTemplates, &cs.Spec.Template.Spec.Containers[0])
}

func (h *harness) pvc(name string) *corev1.PersistentVolumeClaim {
	h.T.Helper()
	pvc, err := h.Env.Kube.CoreV1().PersistentVolumeClaims(h.NS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(h.T, err)
	return pvc
}

// volumeClaim is the claim a pod's volume of that name uses.
func volumeClaim(p corev1.Pod, volume string) string {
	for _, v := range p.Spec.Volumes {
		if v.Name == volume && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

func allImage(pods []corev1.Pod, image string) bool {
	for _, p := range pods {
		if p.Spec.Containers[0].Image != image {
			return false
		}
	}
	return true
}

func eventsWithReason(events []corev1.Event, reason string) []corev1.Event {
	var out []corev1.Event
	for _, e := range events {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// invariants bound what a rollout may do at any moment.
type invariants struct {
	// maxPods: live (not terminating) pods never exceed it.
	maxPods int
	// minReady: once first reached (the initial scale-up is exempt), Ready
	// pods never drop below it: replicas − maxUnavailable (0: unchecked).
	minReady int
	// mayDelete, if set, says whether the deletion of a pod is expected;
	// liveBefore is the number of live pods including it, just before.
	mayDelete func(p *corev1.Pod, liveBefore int) bool
}

// watcher checks invariants at every pod event of one CloneSet.
type watcher struct {
	inv        invariants
	mu         sync.Mutex
	violations []string
	peak       int
	armed      bool
	events     int
	// history holds a copy of every pod version observed, in order.
	history []*corev1.Pod
	deleted map[string]bool
	// live is the last observed version of every pod not deleted yet.
	live map[string]*corev1.Pod
}

// watchInvariants starts a pod informer on the CloneSet's pods that checks
// inv at every event until the test ends.
func (h *harness) watchInvariants(name string, inv invariants) *watcher {
	h.T.Helper()
	w := &watcher{inv: inv}
	f := informers.NewSharedInformerFactoryWithOptions(h.Env.Kube, 0, informers.WithNamespace(h.NS),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = labels.Set{"app": name}.String() }))
	inf := f.Core().V1().Pods().Informer()
	store := inf.GetStore()
	check := func(event string, p *corev1.Pod) { w.observe(event, p, store.List()) }
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { check("add", o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { check("update", o.(*corev1.Pod)) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				check("delete", p)
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

func (w *watcher) observe(event string, p *corev1.Pod, objs []any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	w.history = append(w.history, p.DeepCopy())
	if w.live == nil {
		w.live = map[string]*corev1.Pod{}
	}
	if event == "delete" {
		delete(w.live, p.Name)
	} else {
		w.live[p.Name] = p
	}
	live, ready := 0, 0
	for _, o := range objs {
		q := o.(*corev1.Pod)
		if q.DeletionTimestamp != nil {
			continue
		}
		live++
		if q.Status.Phase == corev1.PodRunning && podReady(q) {
			ready++
		}
	}
	w.peak = max(w.peak, live)
	if w.inv.maxPods > 0 && live > w.inv.maxPods {
		w.violations = append(w.violations, fmt.Sprintf("%s %s: %d live pods > %d", event, p.Name, live, w.inv.maxPods))
	}
	if !w.armed && w.inv.minReady > 0 && ready >= w.inv.minReady {
		w.armed = true
	}
	if w.armed && ready < w.inv.minReady {
		w.violations = append(w.violations, fmt.Sprintf("%s %s: %d ready < %d", event, p.Name, ready, w.inv.minReady))
	}
	if (event == "delete" || p.DeletionTimestamp != nil) && !w.deleted[p.Name] {
		if w.deleted == nil {
			w.deleted = map[string]bool{}
		}
		w.deleted[p.Name] = true
		if w.inv.mayDelete != nil && !w.inv.mayDelete(p, live+1) {
			w.violations = append(w.violations, fmt.Sprintf("pod %s deleted unexpectedly (%d live pods before)", p.Name, live+1))
		}
	}
}

// waitCaughtUp polls until the watcher has observed exactly the pods the API
// server lists now, so a final check sees every event up to the end state.
func (w *watcher) waitCaughtUp(h *harness, name string) {
	h.T.Helper()
	h.WaitCaughtUp("app="+name, &w.mu, func() map[string]*corev1.Pod { return w.live })
}

// check fails the test if any invariant was broken.
func (w *watcher) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Empty(t, w.violations, "invariants broken (%d events observed)", w.events)
}

func (w *watcher) peakPods() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

// versions returns every observed version of the pod, oldest first.
func (w *watcher) versions(name string) []*corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range w.history {
		if p.Name == name {
			out = append(out, p)
		}
	}
	return out
}

// deletedPods returns the names of pods observed deleted or terminating.
func (w *watcher) deletedPods() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, p := range w.history {
		if p.DeletionTimestamp != nil && !seen[p.Name] {
			seen[p.Name] = true
			out = append(out, p.Name)
		}
	}
	return out
}

// expect is a testenv.Eventually result: done when ok, else the reason.
func expect(ok bool, format string, args ...any) (bool, error) {
	if ok {
		return true, nil
	}
	return false, fmt.Errorf(format, args...)
}

var condStatus = testenv.ConditionStatus
