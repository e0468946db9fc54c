package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// Fixture-and-actions tests of sync: the informers' indexers are seeded by
// hand (never started), sync runs once against fake clientsets, and the
// test asserts on the writes they recorded. Pods, nodes and records reuse
// plan_records_test.go's helpers (pod, state, nodes, testSpec).

const ppsNS = "ns"

var ppsNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

type ppsFixture struct {
	*wiringtest.Fakes
	t *testing.T
	c *Controller
}

// newPPSFixture builds the controller through New over fake clientsets
// holding objs, and puts each of objs in the cache of its kind.
func newPPSFixture(t *testing.T, objs ...runtime.Object) *ppsFixture {
	t.Helper()
	f := &ppsFixture{Fakes: wiringtest.New(t, ppsNow, objs...), t: t}
	c, err := New(f.Deps())
	require.NoError(t, err)
	t.Cleanup(c.Queue.ShutDown)
	f.c = c
	f.Cache(objs...)
	return f
}

func (f *ppsFixture) syncKey(key Key) error {
	f.Clear()
	return f.c.sync(context.Background(), key)
}

func (f *ppsFixture) sync(name string) {
	f.t.Helper()
	require.NoError(f.t, f.syncKey(Key{Namespace: ppsNS, Name: name}))
}

// statusWritten is the status of the one status update sync sent.
func (f *ppsFixture) statusWritten() appsv1alpha1.PersistentPodStateStatus {
	return wiringtest.OnlyUpdate[*appsv1alpha1.PersistentPodState](f.Fakes, "persistentpodstates", "status").Status
}

var (
	webRef  = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "uid-web", Controller: ptr.To(true)}
	astsRef = metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "web", UID: "uid-web",
		Controller: ptr.To(true)}
)

// stsPod is pod (plan_records_test.go: ready on node, opts applied) as a
// StatefulSet owned by owner leaves it.
func stsPod(owner metav1.OwnerReference, name, node string, opts ...podOpt) *corev1.Pod {
	p := pod(name, node, opts...)
	p.Namespace, p.UID = ppsNS, types.UID("uid-"+name)
	p.Labels = map[string]string{pub.StatefulSetPodNameLabel: name}
	p.OwnerReferences = []metav1.OwnerReference{owner}
	return p
}

func appsSet(replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ppsNS, Name: "web", UID: "uid-web", ResourceVersion: "5"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)}}
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodes[name]}}
}

// newPPS is the PersistentPodState "web" (testSpec: zone required,
// hostname preferred) targeting the StatefulSet web of apiVersion.
func newPPS(apiVersion string, records map[string]appsv1alpha1.PodState) *appsv1alpha1.PersistentPodState {
	spec := testSpec()
	spec.TargetReference = appsv1alpha1.PersistentPodStateTargetReference{APIVersion: apiVersion, Kind: "StatefulSet", Name: "web"}
	return &appsv1alpha1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Namespace: ppsNS, Name: "web", UID: "uid-pps", ResourceVersion: "1", Generation: 1},
		Spec:       *spec,
		Status:     appsv1alpha1.PersistentPodStateStatus{ObservedGeneration: 1, PodStates: records},
	}
}

// Ready pods of the target on a known node are recorded with the node's
// values of the topology keys; a pod not ready, or of another StatefulSet,
// is not. Once the cache shows the status, a sync writes nothing.
func TestSyncRecordsReadyPodsThenStaysQuiet(t *testing.T) {
	pps := newPPS("apps/v1", nil)
	pps.Generation = 2
	dbRef := webRef
	dbRef.Name, dbRef.UID = "db", "uid-db"
	f := newPPSFixture(t, pps, appsSet(3), node("n1"), node("n2"),
		stsPod(webRef, "web-0", "n1"), stsPod(webRef, "web-1", "n2"), stsPod(webRef, "web-2", "n1", notReady),
		stsPod(dbRef, "db-0", "n1"))
	f.sync("web")

	assert.Equal(t, []string{"update persistentpodstates/status web"}, f.Writes())
	assert.Equal(t, appsv1alpha1.PersistentPodStateStatus{ObservedGeneration: 2,
		PodStates: map[string]appsv1alpha1.PodState{"web-0": state("n1"), "web-1": state("n2")}}, f.statusWritten())
	assert.Empty(t, f.Events())

	cur, err := f.Client.AppsV1alpha1().PersistentPodStates(ppsNS).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	f.Cache(cur)
	f.sync("web")
	assert.Empty(t, f.Writes(), "the status says it all")
}

// Scale-in (retention WhenScaled, the default): the record of a pod whose
// ordinal is beyond the replicas and which is gone is dropped; one whose
// pod is still there is kept. An Advanced StatefulSet's reserved ordinals
// are not replicas. WhenDeleted keeps every record: nothing to write.
func TestSyncDropsRecordsOfScaledInPods(t *testing.T) {
	records := func(names ...string) map[string]appsv1alpha1.PodState {
		out := map[string]appsv1alpha1.PodState{}
		for _, n := range names {
			out[n] = state("n1")
		}
		return out
	}
	asts := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ppsNS, Name: "web", UID: "uid-web"},
		Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](2), ReserveOrdinals: []intstr.IntOrString{intstr.FromInt32(1)}}}
	whenDeleted := newPPS("apps/v1", records("web-0", "web-1", "web-2"))
	whenDeleted.Spec.PersistentPodStateRetentionPolicy = appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted
	for _, tc := range []struct {
		name string
		objs []runtime.Object
		want map[string]appsv1alpha1.PodState // nil: no write
	}{
		{name: "scaled from 3 to 1, web-2 still terminating",
			objs: []runtime.Object{newPPS("apps/v1", records("web-0", "web-1", "web-2")), appsSet(1),
				stsPod(webRef, "web-0", "n1"), stsPod(webRef, "web-2", "n1", notReady)},
			want: records("web-0", "web-2")},
		{name: "Advanced StatefulSet of 2 reserving ordinal 1: ordinals 0 and 2",
			objs: []runtime.Object{newPPS("apps.kruise.io/v1beta1", records("web-0", "web-1", "web-2", "web-3")), asts,
				stsPod(astsRef, "web-0", "n1")},
			want: records("web-0", "web-2")},
		{name: "retention WhenDeleted",
			objs: []runtime.Object{whenDeleted, appsSet(1), stsPod(webRef, "web-0", "n1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPPSFixture(t, append(tc.objs, node("n1"), node("n2"))...)
			f.sync("web")
			if tc.want == nil {
				assert.Empty(t, f.Writes())
				return
			}
			assert.Equal(t, []string{"update persistentpodstates/status web"}, f.Writes())
			assert.Equal(t, tc.want, f.statusWritten().PodStates)
		})
	}
}

// No PersistentPodState, or one being deleted: nothing is written. The
// StatefulSet gone or being deleted: the records are cleared. A targetRef of
// another kind is a permanent error, with nothing written.
func TestSyncTargetGoneOrStateAbsent(t *testing.T) {
	recorded := map[string]appsv1alpha1.PodState{"web-0": state("n1")}
	// Nothing recorded yet: a sync of it would write web-0's record.
	deletingPPS := newPPS("apps/v1", nil)
	deletingPPS.DeletionTimestamp, deletingPPS.Finalizers = &metav1.Time{Time: ppsNow}, []string{"test/keep"}
	deletingSet := appsSet(1)
	deletingSet.DeletionTimestamp, deletingSet.Finalizers = &metav1.Time{Time: ppsNow}, []string{"test/keep"}
	deployment := newPPS("apps/v1", recorded)
	deployment.Spec.TargetReference.Kind = "Deployment"
	live := []runtime.Object{node("n1"), stsPod(webRef, "web-0", "n1")}
	for _, tc := range []struct {
		name      string
		objs      []runtime.Object
		cleared   bool
		permanent bool
	}{
		{name: "no PersistentPodState", objs: []runtime.Object{appsSet(1)}},
		{name: "PersistentPodState being deleted", objs: []runtime.Object{deletingPPS, appsSet(1)}},
		{name: "StatefulSet gone", objs: []runtime.Object{newPPS("apps/v1", recorded)}, cleared: true},
		{name: "StatefulSet being deleted", objs: []runtime.Object{newPPS("apps/v1", recorded), deletingSet}, cleared: true},
		{name: "unsupported targetRef", objs: []runtime.Object{deployment, appsSet(1)}, permanent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPPSFixture(t, append(tc.objs, live...)...)
			err := f.syncKey(Key{Namespace: ppsNS, Name: "web"})
			if tc.permanent {
				require.Error(t, err)
				assert.True(t, controller.IsPermanent(err), "not retried: %v", err)
			} else {
				require.NoError(t, err)
			}
			if !tc.cleared {
				assert.Empty(t, f.Writes())
				return
			}
			assert.Equal(t, []string{"update persistentpodstates/status web"}, f.Writes())
			assert.Equal(t, appsv1alpha1.PersistentPodStateStatus{ObservedGeneration: 1}, f.statusWritten())
		})
	}
}

// A pod recreated on another node than its record's: without the webhook's
// annotation it is reported (Warning event, PersistentTopologyInjected
// False naming it); with it, the condition is True. Either way the record
// follows the pod, and other conditions are kept.
func TestSyncReportsPodsRecreatedWithoutTopology(t *testing.T) {
	inScope := metav1.Condition{Type: "WebhookInScope", Status: metav1.ConditionTrue, Reason: "InScope",
		LastTransitionTime: metav1.NewTime(ppsNow.Add(-time.Hour))}
	for _, tc := range []struct {
		name       string
		opts       []podOpt
		wantStatus metav1.ConditionStatus
		wantReason string
		wantEvents []string
	}{
		{name: "webhook not called", wantStatus: metav1.ConditionFalse, wantReason: ReasonNotInjected,
			wantEvents: []string{"Warning " + ReasonNotInjected + " pod web-0 was created without its recorded topology " +
				"(the pod webhook was not called or failed): it runs on n2, recorded on n1"}},
		{name: "webhook injected", opts: []podOpt{injected("web")}, wantStatus: metav1.ConditionTrue, wantReason: ReasonInjected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pps := newPPS("apps/v1", map[string]appsv1alpha1.PodState{"web-0": state("n1")})
			pps.Status.Conditions = []metav1.Condition{inScope}
			f := newPPSFixture(t, pps, appsSet(1), node("n1"), node("n2"), stsPod(webRef, "web-0", "n2", tc.opts...))
			f.sync("web")

			st := f.statusWritten()
			assert.Equal(t, map[string]appsv1alpha1.PodState{"web-0": state("n2")}, st.PodStates)
			require.Len(t, st.Conditions, 2)
			assert.Equal(t, inScope, *findCondition(st.Conditions, "WebhookInScope"))
			c := findCondition(st.Conditions, ConditionInjected)
			require.NotNil(t, c)
			assert.Equal(t, tc.wantStatus, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Equal(t, metav1.NewTime(ppsNow), c.LastTransitionTime)
			if tc.wantStatus == metav1.ConditionFalse {
				assert.Contains(t, c.Message, "web-0 runs on n2, recorded on n1")
			}
			assert.Equal(t, tc.wantEvents, f.Events())
		})
	}
}

// A generate key keeps the PersistentPodState a StatefulSet's annotations
// ask for: created, brought back to the annotations, deleted once
// auto-generation is off; one the StatefulSet does not control is left
// alone and reported.
func TestSyncGeneratedPersistentPodState(t *testing.T) {
	on := map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationRequiredPersistentTopology: zone}
	set := func(ann map[string]string) *appsv1.StatefulSet {
		s := appsSet(3)
		s.Annotations = ann
		return s
	}
	wantSpec := appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.PersistentPodStateTargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone}},
	}
	existing := func(owned bool, keys ...string) *appsv1alpha1.PersistentPodState {
		p := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ppsNS, Name: "web", UID: "uid-pps", ResourceVersion: "3"},
			Spec: *wantSpec.DeepCopy()}
		p.Spec.RequiredPersistentTopology.NodeTopologyKeys = keys
		if owned {
			p.OwnerReferences = []metav1.OwnerReference{webRef}
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		objs   []runtime.Object
		writes []string
		events []string
	}{
		{name: "asked for, none yet: created", objs: []runtime.Object{set(on)},
			writes: []string{"create persistentpodstates web"},
			events: []string{"Normal " + ReasonGenerated + " generated PersistentPodState web"}},
		{name: "annotations changed: updated", objs: []runtime.Object{set(on), existing(true, "old")},
			writes: []string{"update persistentpodstates web"}},
		{name: "up to date: nothing", objs: []runtime.Object{set(on), existing(true, zone)}},
		{name: "auto-generation off: deleted", objs: []runtime.Object{set(nil), existing(true, zone)},
			writes: []string{"delete persistentpodstates web"},
			events: []string{"Normal " + ReasonGeneratedDeleted + " deleted generated PersistentPodState web"}},
		{name: "not the StatefulSet's: left alone", objs: []runtime.Object{set(on), existing(false, "old")},
			events: []string{"Warning " + ReasonNotGenerated + " PersistentPodState web exists and is not controlled by this StatefulSet: left as it is"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPPSFixture(t, tc.objs...)
			require.NoError(t, f.syncKey(Key{Namespace: ppsNS, Name: "web", Generate: "apps"}))
			assert.Equal(t, tc.writes, f.Writes())
			assert.Equal(t, tc.events, f.Events())
			for _, a := range f.Client.Actions() {
				switch a.GetVerb() {
				case "create":
					got := a.(clienttesting.CreateAction).GetObject().(*appsv1alpha1.PersistentPodState)
					assert.Equal(t, []metav1.OwnerReference{webRef}, got.OwnerReferences, "controlled by the StatefulSet")
					assert.Equal(t, wantSpec, got.Spec)
				case "update":
					got := a.(clienttesting.UpdateAction).GetObject().(*appsv1alpha1.PersistentPodState)
					assert.Equal(t, wantSpec, got.Spec)
					assert.Equal(t, "3", got.ResourceVersion, "an update of the object read")
				case "delete":
					pre := a.(clienttesting.DeleteAction).GetDeleteOptions().Preconditions
					require.NotNil(t, pre)
					assert.Equal(t, types.UID("uid-pps"), *pre.UID, "deletes only the object it saw")
				}
			}
		})
	}
}
