// Package lab is the integration test lab every controller shares: a
// test connects to the control plane of kit/testenv, gets a namespace of its
// own and Flotilla's clientset, builds its reconciler's wiring.Deps over
// informers limited to that namespace, starts the real reconciler in-process
// (its real informers and clients) and waits, with deadlines, on pods,
// revisions and events; a webhook binary's handlers are served in-process
// for the real API server to call (NewWebhook, InstallMutating,
// InstallValidating). A controller's integration harness is then its own
// constructor call and the helpers only it needs:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
//	type harness struct{ *lab.Lab }
//
//	func (h *harness) startController() (stop func()) {
//		d := h.Deps("cloneset-test", h.Gates(known, nil))
//		c, err := controller.New(d)
//		require.NoError(h.T, err)
//		return h.Start(c, 2, d)
//	}
package lab

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Lab is one integration test's corner of the shared control plane.
type Lab struct {
	T      *testing.T
	Env    *testenv.Env
	NS     string // the test's own namespace, deleted when it ends
	Client versioned.Interface
	// Timeout bounds every wait of the lab (WaitPods, WaitEvent).
	Timeout time.Duration
}

// New runs the test in parallel with the others of its package and prepares
// its lab; under -short the test is skipped (testenv.Get).
func New(t *testing.T, timeout time.Duration) *Lab {
	t.Helper()
	t.Parallel()
	env := testenv.Get(t)
	return &Lab{T: t, Env: env, NS: env.Namespace(t), Client: versioned.NewForConfigOrDie(env.Config), Timeout: timeout}
}

// Another returns a lab on a second namespace of the same test, sharing its
// clients and timeout (e.g. the same scenario run by a second controller).
func (l *Lab) Another() *Lab {
	l.T.Helper()
	return &Lab{T: l.T, Env: l.Env, NS: l.Env.Namespace(l.T), Client: l.Client, Timeout: l.Timeout}
}

// Nodes are the create/get/modify/wait helpers for the cluster's nodes
// (testenv.Objects), e.g. to taint or relabel a node the test created.
func (l *Lab) Nodes() *testenv.Objects[*corev1.Node] {
	return testenv.ObjectsOf(l.T, l.Env.Kube.CoreV1().Nodes(), l.Timeout)
}

// Gates returns a feature gate knowing the known features, set as in set,
// then resolved as the binaries resolve theirs (features.Resolve:
// KruiseDaemon=false forces the node-agent gates off).
func (l *Lab) Gates(known []featuregate.Feature, set map[featuregate.Feature]bool) featuregate.MutableFeatureGate {
	l.T.Helper()
	gate := features.MustNewGate(known...)
	for g, v := range set {
		if err := gate.SetFromMap(map[string]bool{string(g): v}); err != nil {
			l.T.Fatalf("lab: gate %s=%v: %v", g, v, err)
		}
	}
	if _, err := features.Resolve(gate); err != nil {
		l.T.Fatalf("lab: resolving gates: %v", err)
	}
	return gate
}

// Deps is a reconciler's wiring.Deps for the test: informers limited to its
// namespace (cached objects without managedFields, as in the binaries), the
// real clock, an event recorder writing as component, the default queue
// options. A test needing other informers or a fake clock replaces those
// fields before calling its controller's New.
func (l *Lab) Deps(component string, gates featuregate.FeatureGate) wiring.Deps {
	l.T.Helper()
	scheme, err := wiring.NewScheme()
	if err != nil {
		l.T.Fatalf("lab: scheme: %v", err)
	}
	return wiring.Deps{
		Kube:   l.Env.Kube,
		Client: l.Client,
		KubeInformers: informers.NewSharedInformerFactoryWithOptions(l.Env.Kube, 0, informers.WithNamespace(l.NS),
			informers.WithTransform(kitcontroller.StripManagedFields)),
		Informers:    flotillainformers.NewSharedInformerFactoryWithOptions(l.Client, 0, flotillainformers.WithNamespace(l.NS)),
		Namespace:    l.NS,
		Gates:        gates,
		Clock:        clock.RealClock{},
		Recorder:     testenv.EventRecorder(l.T, l.Env.Kube, l.NS, component, scheme),
		QueueOptions: kitcontroller.DefaultQueueOptions(),
	}
}

// Start starts d's informer factories and runs c with workers workers
// (testenv.StartController); the returned function stops it and waits until
// it has, as the test's cleanup does too.
func (l *Lab) Start(c testenv.Controller, workers int, d wiring.Deps) (stop func()) {
	l.T.Helper()
	return testenv.StartController(l.T, c, workers, d.KubeInformers, d.Informers)
}

// Pods returns the live (not terminating) pods of the namespace matching the
// label selector, by name.
func (l *Lab) Pods(selector string) []corev1.Pod {
	l.T.Helper()
	list, err := l.Env.Kube.CoreV1().Pods(l.NS).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		l.T.Fatalf("lab: list pods %s: %v", selector, err)
	}
	out := testenv.Live(list.Items)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// WatchPods lists the namespace's pods matching the label selector (all of
// them, terminating ones too) and watches them from that list on: unlike a
// plain watch it replays no ADDED events for the pods listed, and it resumes
// from the last event seen when the API server closes it (it does under load,
// for slow readers). The watch stops when the test ends.
func (l *Lab) WatchPods(selector string) ([]corev1.Pod, watch.Interface) {
	l.T.Helper()
	pods := l.Env.Kube.CoreV1().Pods(l.NS)
	list, err := pods.List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		l.T.Fatalf("lab: list pods %s: %v", selector, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return pods.Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		l.T.Fatalf("lab: watch pods %s: %v", selector, err)
	}
	l.T.Cleanup(func() { w.Stop(); cancel() })
	return list.Items, w
}

// ObservePods calls observe with every pod event of w (e.g. WatchPods'),
// in order, from a goroutine of its own until w stops; observe does its own
// locking against the test's reads.
func ObservePods(w watch.Interface, observe func(watch.EventType, *corev1.Pod)) {
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				observe(ev.Type, p)
			}
		}
	}()
}

// WaitPods polls list until cond holds for the pods it returns, and returns
// them; it fails the test after the lab's timeout with what (what the test
// waited for) and the last pods seen (DescribePods).
func (l *Lab) WaitPods(list func() []corev1.Pod, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	l.T.Helper()
	var pods []corev1.Pod
	testenv.Eventually(l.T, l.Timeout, func() (bool, error) {
		pods = list()
		if cond(pods) {
			return true, nil
		}
		return false, fmt.Errorf("%s (last: %s)", what, DescribePods(pods))
	})
	return pods
}

// DescribePods prints pods compactly for failure messages: name, phase,
// readiness, revision, lifecycle state, first container's image.
func DescribePods(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		image := ""
		if len(p.Spec.Containers) > 0 {
			image = p.Spec.Containers[0].Image
		}
		fmt.Fprintf(&b, "\n  %s phase=%s ready=%v rev=%s state=%s image=%s", p.Name, p.Status.Phase, testenv.PodReady(&p),
			p.Labels[pub.ControllerRevisionHashLabelKey], p.Labels[pub.LifecycleStateKey], image)
	}
	return b.String()
}

// RunningReady reports whether every pod is Running and Ready.
func RunningReady(pods []corev1.Pod) bool {
	for i := range pods {
		if pods[i].Status.Phase != corev1.PodRunning || !testenv.PodReady(&pods[i]) {
			return false
		}
	}
	return true
}

// Revisions returns the ControllerRevisions of the namespace controlled by
// owner, by revision number.
func (l *Lab) Revisions(owner types.UID) []appsv1.ControllerRevision {
	l.T.Helper()
	list, err := l.Env.Kube.AppsV1().ControllerRevisions(l.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		l.T.Fatalf("lab: list revisions: %v", err)
	}
	var out []appsv1.ControllerRevision
	for _, r := range list.Items {
		if ref := metav1.GetControllerOf(&r); ref != nil && ref.UID == owner {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}

// Events returns the namespace's events about the object called name.
func (l *Lab) Events(name string) []corev1.Event { return l.Env.Events(l.T, l.NS, name) }

// WaitEvent polls until an event with reason about the object called name
// exists, and returns it.
func (l *Lab) WaitEvent(name, reason string) corev1.Event {
	l.T.Helper()
	var ev corev1.Event
	testenv.Eventually(l.T, l.Timeout, func() (bool, error) {
		for _, e := range l.Events(name) {
			if e.Reason == reason {
				ev = e
				return true, nil
			}
		}
		return false, fmt.Errorf("no event %s on %s", reason, name)
	})
	return ev
}

// PatchPod applies a JSON merge patch to a pod of the namespace.
func (l *Lab) PatchPod(name, patch string) { l.T.Helper(); l.Env.PatchPod(l.T, l.NS, name, patch) }
