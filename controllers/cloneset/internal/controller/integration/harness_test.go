// Package integration runs the real CloneSet reconciler in-process against the
// local control plane (kit/testenv: kube-apiserver, kube-scheduler,
// kube-controller-manager, kwok nodes and kubelets), one namespace per test,
// and asserts what a user sees: pods, labels, PVCs, revisions and status.
package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/cloneset/internal/controller"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// waitTimeout bounds every poll: pods need the scheduler and kwok.
const waitTimeout = 90 * time.Second

// Images the tests roll between; kwok never pulls them.
const (
	imageV1 = "registry.local/app:v1"
	imageV2 = "registry.local/app:v2"
	imageV3 = "registry.local/app:v3"
)

type harness struct {
	t      *testing.T
	env    *testenv.Env
	ns     string
	client versioned.Interface
	sets   *testenv.Objects[*appsv1alpha1.CloneSet]
	gates  map[featuregate.Feature]bool
	// queueOptions and queueMetrics, if set, configure the next controller.
	queueOptions *kitcontroller.QueueOptions
	queueMetrics workqueue.MetricsProvider
	// ctrl is the running controller.
	ctrl *controller.Controller
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	t.Parallel()
	env := testenv.Get(t)
	h := &harness{t: t, env: env, ns: env.Namespace(t), client: versioned.NewForConfigOrDie(env.Config), gates: map[featuregate.Feature]bool{}}
	h.sets = testenv.ObjectsOf(t, h.client.AppsV1alpha1().CloneSets(h.ns), waitTimeout)
	h.sets.Describe = func(cs *appsv1alpha1.CloneSet) string { return fmt.Sprintf("%+v", cs.Status) }
	return h
}

// startController runs the reconciler over informers limited to the test's
// namespace; the returned function stops it and waits until it has (also
// done at cleanup).
func (h *harness) startController() (stop func()) {
	t := h.t
	t.Helper()
	scheme, err := wiring.NewScheme()
	require.NoError(t, err)
	gate := features.MustNewGate(append(knownGates(), features.PreDownloadImageForInPlaceUpdate, features.KruiseDaemon)...)
	for g, v := range h.gates {
		require.NoError(t, gate.SetFromMap(map[string]bool{string(g): v}))
	}
	_, err = features.Resolve(gate) // as the binary does: KruiseDaemon=false forces node-agent gates off
	require.NoError(t, err)
	d := controller.Deps{
		Kube:          h.env.Kube,
		Client:        h.client,
		KubeInformers: informers.NewSharedInformerFactoryWithOptions(h.env.Kube, 0, informers.WithNamespace(h.ns), informers.WithTransform(kitcontroller.StripManagedFields)),
		Informers:     flotillainformers.NewSharedInformerFactoryWithOptions(h.client, 0, flotillainformers.WithNamespace(h.ns)),
		Namespace:     h.ns,
		Gates:         gate,
		Clock:         clock.RealClock{},
		Recorder:      testenv.EventRecorder(t, h.env.Kube, h.ns, "cloneset-test", scheme),
		QueueOptions:  kitcontroller.DefaultQueueOptions(),
		QueueConfig:   kitcontroller.QueueConfig{MetricsProvider: h.queueMetrics},
	}
	if h.queueOptions != nil {
		d.QueueOptions = *h.queueOptions
	}
	c, err := controller.New(d)
	require.NoError(t, err)
	h.ctrl = c
	return testenv.StartController(t, c, h.workers(), d.KubeInformers, d.Informers)
}

func (h *harness) workers() int {
	if h.queueMetrics != nil {
		return 1
	}
	return 2
}

func knownGates() []featuregate.Feature {
	return []featuregate.Feature{
		features.CloneSetShortHash, features.CloneSetPartitionRollback, features.InPlaceUpdateEnvFromMetadata,
		features.RecreatePodWhenChangeVCTInCloneSetGate, features.PreparingUpdateAsUpdate,
	}
}

// newCloneSet builds a CloneSet of replicas pods running imageV1 in one
// container "main"; mutate adjusts it.
func newCloneSet(name string, replicas int32, mutate ...func(*appsv1alpha1.CloneSet)) *appsv1alpha1.CloneSet {
	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					// No toleration of test-owned nodes: other packages create
					// and delete theirs while these tests run, and the pod
					// garbage collector deletes pods bound to a deleted node.
					Containers: []corev1.Container{{Name: "main", Image: imageV1}},
				},
			},
		},
	}
	for _, m := range mutate {
		m(cs)
	}
	return cs
}

// create, get and modify (retrying on conflict) go to the API server
// (kit/testenv.Objects).
func (h *harness) create(cs *appsv1alpha1.CloneSet) *appsv1alpha1.CloneSet {
	h.t.Helper()
	return h.sets.Create(cs)
}
func (h *harness) get(name string) *appsv1alpha1.CloneSet { h.t.Helper(); return h.sets.Get(name) }
func (h *harness) modify(name string, mutate func(*appsv1alpha1.CloneSet)) {
	h.t.Helper()
	h.sets.Modify(name, mutate)
}

// pods returns the CloneSet's live (not terminating) pods, by name.
func (h *harness) pods(name string) []corev1.Pod {
	h.t.Helper()
	list, err := h.env.Kube.CoreV1().Pods(h.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
	require.NoError(h.t, err)
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// waitPods polls until cond holds for the CloneSet's live pods.
func (h *harness) waitPods(name, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	h.t.Helper()
	var pods []corev1.Pod
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) {
		pods = h.pods(name)
		if cond(pods) {
			return true, nil
		}
		return false, fmt.Errorf("pods of %s: %s (last: %s)", name, what, describe(&pods))
	})
	return pods
}

// waitStatus polls until cond holds for the CloneSet's status of its
// current generation.
func (h *harness) waitStatus(name, what string, cond func(appsv1alpha1.CloneSetStatus) bool) *appsv1alpha1.CloneSet {
	h.t.Helper()
	return h.sets.WaitFor(name, what, func(cs *appsv1alpha1.CloneSet) bool {
		return cs.Status.ObservedGeneration == cs.Generation && cond(cs.Status)
	})
}

type stringer func() string

func (s stringer) String() string { return s() }

// describe prints pods compactly for failure messages.
func describe(pods *[]corev1.Pod) fmt.Stringer {
	return stringer(func() string {
		var b strings.Builder
		for _, p := range *pods {
			fmt.Fprintf(&b, "\n  %s phase=%s ready=%v rev=%s state=%s image=%s", p.Name, p.Status.Phase, podReady(&p),
				p.Labels[pub.ControllerRevisionHashLabelKey], p.Labels[pub.LifecycleStateKey], p.Spec.Containers[0].Image)
		}
		return b.String()
	})
}

// allReady: n pods, all Running and Ready.
func allReady(n int) func([]corev1.Pod) bool {
	return func(pods []corev1.Pod) bool {
		if len(pods) != n {
			return false
		}
		for i := range pods {
			if pods[i].Status.Phase != corev1.PodRunning || !podReady(&pods[i]) {
				return false
			}
		}
		return true
	}
}

// settled: status shows n ready, available, updated replicas.
func settled(n int32) func(appsv1alpha1.CloneSetStatus) bool {
	return func(s appsv1alpha1.CloneSetStatus) bool {
		return s.Replicas == n && s.ReadyReplicas == n && s.AvailableReplicas == n && s.UpdatedReplicas == n &&
			s.UpdatedReadyReplicas == n && s.CurrentRevision == s.UpdateRevision
	}
}

// revisions returns the CloneSet's ControllerRevisions.
func (h *harness) revisions(cs *appsv1alpha1.CloneSet) []appsv1.ControllerRevision {
	h.t.Helper()
	list, err := h.env.Kube.AppsV1().ControllerRevisions(h.ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(h.t, err)
	var out []appsv1.ControllerRevision
	for _, r := range list.Items {
		if ref := metav1.GetControllerOf(&r); ref != nil && ref.UID == cs.UID {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}

// waitEvent polls until an event with reason about the CloneSet exists.
func (h *harness) waitEvent(name, reason string) corev1.Event {
	h.t.Helper()
	var ev corev1.Event
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) {
		for _, e := range h.events(name) {
			if e.Reason == reason {
				ev = e
				return true, nil
			}
		}
		return false, fmt.Errorf("no event %s on %s", reason, name)
	})
	return ev
}

// Shared pod helpers (kit/testenv).
var (
	podReady = testenv.PodReady
	names    = testenv.PodNames
	uids     = testenv.PodUIDs
)

func (h *harness) events(name string) []corev1.Event { return h.env.Events(h.t, h.ns, name) }

func (h *harness) patchPod(name, patch string) { h.env.PatchPod(h.t, h.ns, name, patch) }
