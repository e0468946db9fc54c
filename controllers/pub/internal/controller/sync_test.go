package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/workload"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// Fixture-and-actions tests of sync, sample-controller style: the
// informers' indexers are seeded by hand (never started), sync runs once
// against fake clientsets, and the test asserts on the writes recorded.

const syncNS = "ns"

var syncNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// fakeFinder resolves workloads from a fixed table keyed "Kind/name".
type fakeFinder map[string]*workload.Workload

func (f fakeFinder) Get(_ context.Context, _, kind, _, name string) (*workload.Workload, error) {
	return f[kind+"/"+name], nil
}

func (f fakeFinder) TopLevel(_ context.Context, ref *metav1.OwnerReference, _ string) (*workload.Workload, error) {
	w := f[ref.Kind+"/"+ref.Name]
	if w == nil || w.UID != ref.UID {
		return nil, nil
	}
	return w, nil
}

type syncFixture struct {
	*wiringtest.Fakes
	t *testing.T
	c *Controller
}

// newSyncFixture builds the controller through New over fake clientsets
// holding pubs and pods, and seeds its caches with the same objects.
func newSyncFixture(t *testing.T, finder workload.Finder, pubs []*policyv1alpha1.PodUnavailableBudget, pods ...*corev1.Pod) *syncFixture {
	t.Helper()
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p)
	}
	for _, p := range pubs {
		objs = append(objs, p)
	}
	f := &syncFixture{Fakes: wiringtest.New(t, syncNow, objs...), t: t}
	c, err := New(Deps{Deps: f.Deps(), Finder: finder})
	require.NoError(t, err)
	t.Cleanup(c.Queue.ShutDown)
	f.Cache(objs...)
	f.c = c
	return f
}

func (f *syncFixture) sync(name string) {
	f.t.Helper()
	f.Clear()
	require.NoError(f.t, f.c.sync(context.Background(), types.NamespacedName{Namespace: syncNS, Name: name}))
}

// patchedPods are the pods sync patched, in order.
func (f *syncFixture) patchedPods() []string {
	var out []string
	for _, a := range f.Kube.Actions() {
		if a.Matches("patch", "pods") {
			out = append(out, a.(clienttesting.PatchAction).GetName())
		}
	}
	return out
}

// statusWritten is the status of the one status update sync sent.
func (f *syncFixture) statusWritten() policyv1alpha1.PodUnavailableBudgetStatus {
	return wiringtest.OnlyUpdate[*policyv1alpha1.PodUnavailableBudget](f.Fakes, "podunavailablebudgets", "status").Status
}

func (f *syncFixture) annotations(name string) map[string]string {
	f.t.Helper()
	p, err := f.Kube.CoreV1().Pods(syncNS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return p.Annotations
}

type podSpec struct {
	name   string
	ready  bool
	owner  *workload.Workload
	labels map[string]string
	marked string // related-pub annotation
	gone   bool   // terminating
}

func mkPod(s podSpec) *corev1.Pod {
	p := pod(syncNS, s.name, s.labels, nil, s.ready)
	p.UID = types.UID("uid-" + s.name)
	if s.owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: s.owner.APIVersion, Kind: s.owner.Kind, Name: s.owner.Name,
			UID: s.owner.UID, Controller: ptr.To(true)}}
	}
	if s.marked != "" {
		p.Annotations = map[string]string{pub.PodRelatedPubAnnotation: s.marked, pub.PodRelatedPubAnnotationNew: s.marked}
	}
	if s.gone {
		p.DeletionTimestamp = &metav1.Time{Time: syncNow}
		p.Finalizers = []string{"test/keep"}
	}
	return p
}

func selectorPUB(name string, maxUnavailable string, app string) *policyv1alpha1.PodUnavailableBudget {
	mu := intstr.Parse(maxUnavailable)
	return &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: syncNS, Name: name, Generation: 1, ResourceVersion: "1"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			MaxUnavailable: &mu,
		},
	}
}

var (
	webSet = &workload.Workload{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-web",
		Replicas: 3, Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}
	webFinder = fakeFinder{"CloneSet/web": webSet}
	webLabels = map[string]string{"app": "web"}
)

// A selector budget over three pods of a 3-replica workload, one not ready:
// sync marks every pod with both related-pub keys and writes the counts.
func TestSyncMarksPodsAndWritesStatus(t *testing.T) {
	p := selectorPUB("web", "1", "web")
	f := newSyncFixture(t, webFinder, []*policyv1alpha1.PodUnavailableBudget{p},
		mkPod(podSpec{name: "web-0", ready: true, owner: webSet, labels: webLabels}),
		mkPod(podSpec{name: "web-1", ready: true, owner: webSet, labels: webLabels}),
		mkPod(podSpec{name: "web-2", ready: false, owner: webSet, labels: webLabels}),
		mkPod(podSpec{name: "other", ready: true, labels: map[string]string{"app": "other"}}),
	)
	f.sync("web")

	assert.ElementsMatch(t, []string{"web-0", "web-1", "web-2"}, f.patchedPods())
	for _, n := range []string{"web-0", "web-1", "web-2"} {
		a := f.annotations(n)
		assert.Equal(t, "web", a[pub.PodRelatedPubAnnotation], n)
		assert.Equal(t, "web", a[pub.PodRelatedPubAnnotationNew], n)
	}
	assert.Empty(t, f.annotations("other"), "a pod outside the selector is not marked")
	s := f.statusWritten()
	assert.Equal(t, int32(3), s.TotalReplicas)
	assert.Equal(t, int32(2), s.DesiredAvailable)
	assert.Equal(t, int32(2), s.CurrentAvailable)
	assert.Equal(t, int32(0), s.UnavailableAllowed)
	assert.Equal(t, int64(1), s.ObservedGeneration)
}

// The steady state: pods already marked and the status as computed — sync
// writes nothing.
func TestSyncSteadyStateWritesNothing(t *testing.T) {
	p := selectorPUB("web", "1", "web")
	p.Status = policyv1alpha1.PodUnavailableBudgetStatus{ObservedGeneration: 1, TotalReplicas: 3, DesiredAvailable: 2,
		CurrentAvailable: 3, UnavailableAllowed: 1}
	f := newSyncFixture(t, webFinder, []*policyv1alpha1.PodUnavailableBudget{p},
		mkPod(podSpec{name: "web-0", ready: true, owner: webSet, labels: webLabels, marked: "web"}),
		mkPod(podSpec{name: "web-1", ready: true, owner: webSet, labels: webLabels, marked: "web"}),
		mkPod(podSpec{name: "web-2", ready: true, owner: webSet, labels: webLabels, marked: "web"}),
	)
	f.sync("web")
	assert.Empty(t, f.Writes())
}

// A targetRef budget: the workload's pods by owner, expected from its
// replicas unless pub.kruise.io/protect-total-replicas says otherwise; a
// terminating pod neither counts nor is marked.
func TestSyncTargetRef(t *testing.T) {
	for _, tc := range []struct {
		name                                string
		totalAnnotation                     string
		wantTotal, wantDesired, wantAllowed int32
	}{
		{"replicas from the workload", "", 3, 2, 0},
		{"protect-total-replicas wins", "5", 5, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := selectorPUB("web", "1", "web")
			p.Spec.Selector = nil
			p.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: webSet.APIVersion, Kind: webSet.Kind, Name: webSet.Name}
			if tc.totalAnnotation != "" {
				p.Annotations = map[string]string{pub.PubProtectTotalReplicasAnnotation: tc.totalAnnotation}
			}
			f := newSyncFixture(t, webFinder, []*policyv1alpha1.PodUnavailableBudget{p},
				mkPod(podSpec{name: "web-0", ready: true, owner: webSet, labels: webLabels}),
				mkPod(podSpec{name: "web-1", ready: true, owner: webSet, labels: webLabels}),
				mkPod(podSpec{name: "web-2", ready: true, owner: webSet, labels: webLabels, gone: true}),
			)
			f.sync("web")
			assert.ElementsMatch(t, []string{"web-0", "web-1"}, f.patchedPods())
			s := f.statusWritten()
			assert.Equal(t, tc.wantTotal, s.TotalReplicas)
			assert.Equal(t, tc.wantDesired, s.DesiredAvailable)
			assert.Equal(t, int32(2), s.CurrentAvailable)
			assert.Equal(t, tc.wantAllowed, s.UnavailableAllowed)
		})
	}
}

// A pod marked for a budget that no longer exists is re-marked; one marked
// for another budget that still covers it keeps its mark (one budget
// guards a pod, the first to mark it).
func TestSyncRemarksOnlyPodsOfGoneBudgets(t *testing.T) {
	web := selectorPUB("web", "1", "web")
	other := selectorPUB("first", "1", "web")
	f := newSyncFixture(t, webFinder, []*policyv1alpha1.PodUnavailableBudget{web, other},
		mkPod(podSpec{name: "web-0", ready: true, owner: webSet, labels: webLabels, marked: "deleted"}),
		mkPod(podSpec{name: "web-1", ready: true, owner: webSet, labels: webLabels, marked: "first"}),
		mkPod(podSpec{name: "web-2", ready: true, owner: webSet, labels: webLabels, marked: "web"}),
	)
	f.sync("web")
	assert.Equal(t, []string{"web-0"}, f.patchedPods())
	assert.Equal(t, "web", f.annotations("web-0")[pub.PodRelatedPubAnnotationNew])
	assert.Equal(t, "first", f.annotations("web-1")[pub.PodRelatedPubAnnotationNew])
}

// A budget that is gone or being deleted: nothing is written.
func TestSyncGoneOrDeletingBudget(t *testing.T) {
	deleting := selectorPUB("web", "1", "web")
	deleting.DeletionTimestamp = &metav1.Time{Time: syncNow}
	deleting.Finalizers = []string{"test/keep"}
	pods := []*corev1.Pod{mkPod(podSpec{name: "web-0", ready: true, owner: webSet, labels: webLabels})}

	f := newSyncFixture(t, webFinder, nil, pods...)
	f.sync("web")
	assert.Empty(t, f.Writes(), "no budget")

	f = newSyncFixture(t, webFinder, []*policyv1alpha1.PodUnavailableBudget{deleting}, pods...)
	f.sync("web")
	assert.Empty(t, f.Writes(), "budget being deleted")
}

// No pod matches: a NoPods event, and the status written with zero counts
// (the budget lets nothing through).
func TestSyncNoPods(t *testing.T) {
	p := selectorPUB("web", "1", "web")
	p.Status.CurrentAvailable = 4
	f := newSyncFixture(t, webFinder, []*policyv1alpha1.PodUnavailableBudget{p})
	f.sync("web")
	assert.Equal(t, []string{"Normal NoPods No matching pods found"}, f.Events())
	assert.Empty(t, f.patchedPods())
	s := f.statusWritten()
	assert.Equal(t, int32(0), s.CurrentAvailable)
	assert.Equal(t, int32(0), s.UnavailableAllowed)
}

// A pod recorded in disruptedPods is not counted available until its
// record expires, and sync asks to look again at the expiry.
func TestSyncRequeuesAtRecordExpiry(t *testing.T) {
	p := selectorPUB("web", "1", "web")
	p.Status = policyv1alpha1.PodUnavailableBudgetStatus{ObservedGeneration: 1, TotalReplicas: 3, DesiredAvailable: 2,
		CurrentAvailable: 2, UnavailableAllowed: 0,
		DisruptedPods: map[string]metav1.Time{"web-0": {Time: syncNow.Add(-10 * time.Second)}}}
	f := newSyncFixture(t, webFinder, []*policyv1alpha1.PodUnavailableBudget{p},
		mkPod(podSpec{name: "web-0", ready: true, owner: webSet, labels: webLabels, marked: "web"}),
		mkPod(podSpec{name: "web-1", ready: true, owner: webSet, labels: webLabels, marked: "web"}),
		mkPod(podSpec{name: "web-2", ready: true, owner: webSet, labels: webLabels, marked: "web"}),
	)
	f.sync("web")
	assert.Empty(t, f.Writes(), "status unchanged while web-0 is recorded")
	assert.Equal(t, 0, f.c.Queue.Len(), "not due yet")
	// The record expires DeletionTimeout after it was taken: 10s from now.
	clk := f.Clock
	clk.Step(9 * time.Second)
	assert.Equal(t, 0, f.c.Queue.Len(), "not due before the expiry")
	clk.Step(2 * time.Second)
	require.Eventually(t, func() bool { return f.c.Queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond,
		"the budget is queued again at the expiry")
}
