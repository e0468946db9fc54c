package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// Fixture-and-actions tests of both syncs, sample-controller style: the
// informers' indexers are seeded by hand (never started), syncNode or
// syncMarker runs once against fake clientsets, and the test asserts on the
// writes recorded.

type probeFixture struct {
	*wiringtest.Fakes
	t *testing.T
	c *Controller
}

func newProbeFixture(t *testing.T, objs ...runtime.Object) *probeFixture {
	t.Helper()
	f := &probeFixture{Fakes: wiringtest.New(t, time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), objs...), t: t}
	c, err := New(f.Deps())
	require.NoError(t, err)
	t.Cleanup(c.nodeQueue.ShutDown)
	t.Cleanup(c.ppmQueue.ShutDown)
	f.Cache(objs...)
	f.c = c
	return f
}

func (f *probeFixture) syncNode(node string) {
	f.t.Helper()
	f.Clear()
	require.NoError(f.t, f.c.syncNode(context.Background(), node))
}

func (f *probeFixture) syncMarker(name string) {
	f.t.Helper()
	f.Clear()
	require.NoError(f.t, f.c.syncMarker(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}))
}

// writes are f.Writes with a pod update or patch listed as a "write" (how a
// pod is written is kit/podcontrol's business, what lands on it is asserted
// on the pod).
func (f *probeFixture) writes() []string {
	var out []string
	for _, a := range f.Actions() {
		w := wiringtest.Describe(a)
		if (a.GetVerb() == "update" || a.GetVerb() == "patch") && a.GetResource().Resource == "pods" {
			w = "write" + strings.TrimPrefix(w, a.GetVerb())
		}
		out = append(out, w)
	}
	return out
}

// written is the object of the one create or update of resource (and
// subresource) sent.
func written[T runtime.Object](f *probeFixture, verb, resource, sub string) T {
	f.t.Helper()
	var got []T
	for _, a := range f.Client.Actions() {
		if a.Matches(verb, resource) && a.GetSubresource() == sub {
			got = append(got, a.(interface{ GetObject() runtime.Object }).GetObject().(T))
		}
	}
	require.Len(f.t, got, 1, "%s %s/%s", verb, resource, sub)
	return got[0]
}

func (f *probeFixture) pod(name string) *corev1.Pod {
	f.t.Helper()
	p, err := f.Kube.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return p
}

func node(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }

// probePod is gamePod with a UID of its own.
func probePod(name, node string) *corev1.Pod {
	p := gamePod(name, node)
	p.UID = types.UID("uid-" + name)
	return p
}

// desiredFor is the NodePodProbe spec gameServer puts on pods.
func desiredFor(pods ...*corev1.Pod) []appsv1alpha1.PodProbe {
	return desiredPodProbes(pods, []*appsv1alpha1.PodProbeMarker{gameServer()})
}

// A node with two selected pods and no NodePodProbe: one is created,
// listing both pods with the marker's probe "<marker>#<probe>"; a pod on
// another node is not listed and nothing is written to pods (no results).
func TestSyncNodeCreatesNodePodProbe(t *testing.T) {
	f := newProbeFixture(t, node("n1"), gameServer(), probePod("a", "n1"), probePod("b", "n1"), probePod("c", "n2"))
	f.syncNode("n1")
	assert.Equal(t, []string{"create nodepodprobes n1"}, f.writes())
	npp := written[*appsv1alpha1.NodePodProbe](f, "create", "nodepodprobes", "")
	require.Len(t, npp.Spec.PodProbes, 2)
	for i, name := range []string{"a", "b"} {
		pp := npp.Spec.PodProbes[i]
		assert.Equal(t, name, pp.Name)
		assert.Equal(t, "uid-"+name, pp.UID)
		require.Len(t, pp.Probes, 1)
		assert.Equal(t, "game-server-probe#Idle", pp.Probes[0].Name)
		assert.Equal(t, "game-server", pp.Probes[0].ContainerName)
	}
}

// A node whose pods no marker selects gets no NodePodProbe.
func TestSyncNodeWithoutProbesWritesNothing(t *testing.T) {
	p := probePod("a", "n1")
	p.Labels = map[string]string{"app": "web"}
	f := newProbeFixture(t, node("n1"), gameServer(), p)
	f.syncNode("n1")
	assert.Empty(t, f.writes())
}

// A NodePodProbe listing a pod that is gone is updated to the pods there now.
func TestSyncNodeUpdatesStaleSpec(t *testing.T) {
	a, b := probePod("a", "n1"), probePod("b", "n1")
	npp := &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"},
		Spec: appsv1alpha1.NodePodProbeSpec{PodProbes: desiredFor(a, b)}}
	f := newProbeFixture(t, node("n1"), gameServer(), a, npp)
	f.syncNode("n1")
	assert.Equal(t, []string{"update nodepodprobes n1"}, f.writes())
	got := written[*appsv1alpha1.NodePodProbe](f, "update", "nodepodprobes", "")
	assert.Equal(t, desiredFor(a), got.Spec.PodProbes)
}

// Results in the NodePodProbe's status reach the pods: one pods/status
// patch per pod that changes (labels, annotations and the condition of the
// marker policy); a pod already marked is not written.
func TestSyncNodeMarksPodsFromResults(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 11, 26, 11, 0, 0, 0, time.UTC))
	a, b := probePod("a", "n1"), probePod("b", "n1")
	b.Labels["gameserver-idle"] = "false"
	b.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": "10"}
	b.Status.Conditions = []corev1.PodCondition{{Type: idleCondition, Status: corev1.ConditionFalse, LastProbeTime: t1, LastTransitionTime: t1}}
	state := func(s appsv1alpha1.ProbeState) []appsv1alpha1.ContainerProbeState {
		return []appsv1alpha1.ContainerProbeState{{Name: "game-server-probe#Idle", State: s, LastProbeTime: t1, LastTransitionTime: t1}}
	}
	npp := &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"},
		Spec: appsv1alpha1.NodePodProbeSpec{PodProbes: desiredFor(a, b)},
		Status: appsv1alpha1.NodePodProbeStatus{PodProbeStatuses: []appsv1alpha1.PodProbeStatus{
			{Namespace: "ns", Name: "a", UID: "uid-a", ProbeStates: state(appsv1alpha1.ProbeSucceeded)},
			{Namespace: "ns", Name: "b", UID: "uid-b", ProbeStates: state(appsv1alpha1.ProbeFailed)},
		}}}
	f := newProbeFixture(t, node("n1"), gameServer(), a, b, npp)
	f.syncNode("n1")
	assert.Equal(t, []string{"write pods/status a"}, f.writes())
	got := f.pod("a")
	assert.Equal(t, "true", got.Labels["gameserver-idle"])
	assert.Equal(t, "-10", got.Annotations["controller.kubernetes.io/pod-deletion-cost"])
	require.Len(t, got.Status.Conditions, 1)
	assert.Equal(t, corev1.PodConditionType(idleCondition), got.Status.Conditions[0].Type)
	assert.Equal(t, corev1.ConditionTrue, got.Status.Conditions[0].Status)
}

// The NodePodProbe of a node that is gone is deleted, with the UID it was
// read with as precondition.
func TestSyncNodeDeletesNodePodProbeOfGoneNode(t *testing.T) {
	npp := &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "npp-uid", ResourceVersion: "1"}}
	f := newProbeFixture(t, npp)
	f.syncNode("n1")
	assert.Equal(t, []string{"delete nodepodprobes n1"}, f.writes())
	for _, a := range f.Client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			require.NotNil(t, d.GetDeleteOptions().Preconditions)
			assert.Equal(t, types.UID("npp-uid"), *d.GetDeleteOptions().Preconditions.UID)
		}
	}
}

// A live marker: the finalizer is added, then the status (matched pods)
// written; once both are there, nothing.
func TestSyncMarkerFinalizerAndStatus(t *testing.T) {
	m := gameServer()
	m.Generation, m.ResourceVersion = 2, "1"
	f := newProbeFixture(t, m, probePod("a", "n1"), probePod("b", "n1"))
	f.syncMarker(m.Name)
	assert.Equal(t, []string{"update podprobemarkers game-server-probe", "update podprobemarkers/status game-server-probe"}, f.writes())
	assert.Contains(t, written[*appsv1alpha1.PodProbeMarker](f, "update", "podprobemarkers", "").Finalizers, Finalizer)
	st := written[*appsv1alpha1.PodProbeMarker](f, "update", "podprobemarkers", "status").Status
	assert.Equal(t, int64(2), st.MatchedPods)
	assert.Equal(t, int64(2), st.ObservedGeneration)

	done := gameServer()
	done.Generation, done.ResourceVersion, done.Finalizers = 2, "1", []string{Finalizer}
	done.Status = appsv1alpha1.PodProbeMarkerStatus{ObservedGeneration: 2, MatchedPods: 2}
	f = newProbeFixture(t, done, probePod("a", "n1"), probePod("b", "n1"))
	f.syncMarker(done.Name)
	assert.Empty(t, f.writes(), "steady state")
}

// A deleted marker: its marks come off the pods it selected (pods/status
// patches), then its finalizer.
func TestSyncMarkerDeletedUnmarksThenReleases(t *testing.T) {
	m := gameServer()
	m.ResourceVersion, m.Finalizers = "1", []string{Finalizer, "other/keep"}
	m.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	marked := probePod("a", "n1")
	marked.Labels["gameserver-idle"] = "true"
	marked.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": "-10"}
	marked.Status.Conditions = []corev1.PodCondition{{Type: idleCondition, Status: corev1.ConditionTrue}}
	f := newProbeFixture(t, m, marked, probePod("b", "n1"))
	f.syncMarker(m.Name)
	assert.Equal(t, []string{"write pods/status a", "update podprobemarkers game-server-probe"}, f.writes())
	got := f.pod("a")
	assert.NotContains(t, got.Labels, "gameserver-idle")
	assert.NotContains(t, got.Annotations, "controller.kubernetes.io/pod-deletion-cost")
	assert.Empty(t, got.Status.Conditions)
	assert.Equal(t, []string{"other/keep"}, written[*appsv1alpha1.PodProbeMarker](f, "update", "podprobemarkers", "").Finalizers)
}
