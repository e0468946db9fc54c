package controller

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// syncFixture is CloneSet ns/web (testCloneSet) with its revisions and pods
// as the informer caches would show them. run builds the controller over
// fake clients holding exactly these objects, seeds its caches, runs sync
// and returns the writes it made — sample-controller style.
type syncFixture struct {
	t    *testing.T
	cs   *appsv1alpha1.CloneSet
	revs []*appsv1.ControllerRevision
	pods []*corev1.Pod
	// gone: the CloneSet is not in the cache (deleted).
	gone bool

	*wiringtest.Fakes // from the first run
	c                 *Controller
	pc                *podcontrol.Fake
	err               error
}

func newSyncFixture(t *testing.T, replicas int32) *syncFixture {
	cs := testCloneSet(replicas)
	cs.Generation = 1
	return &syncFixture{t: t, cs: cs}
}

// withRevision adds the revision of the CloneSet's template and makes it
// the current one; pods built by pod run it.
func (f *syncFixture) withRevision() *appsv1.ControllerRevision {
	data, err := revision.TemplatePatch(&f.cs.Spec.Template)
	require.NoError(f.t, err)
	var cc int32
	r := revision.New(f.cs, kindCloneSet, f.cs.Spec.Template.Labels, data, 1, &cc)
	r.Annotations = map[string]string{pub.CloneSetVolumeClaimTemplateHashKey: ""}
	f.revs = append(f.revs, r)
	f.cs.Status.CurrentRevision, f.cs.Status.UpdateRevision = r.Name, r.Name
	return r
}

// pod adds a pod of the CloneSet (owned unless orphan) at the fixture's
// revision.
func (f *syncFixture) pod(name string, owned bool, opts ...podOpt) *corev1.Pod {
	require.NotEmpty(f.t, f.revs, "withRevision first")
	p := testPod(name, append([]podOpt{atRev(f.revs[0].Name), withLabel(pub.CloneSetInstanceID, name)}, opts...)...)
	p.UID = types.UID("uid-" + name)
	if owned {
		p.OwnerReferences = []metav1.OwnerReference{controllerRef(f.cs)}
	}
	f.pods = append(f.pods, p)
	return p
}

// run runs one sync over fresh clients and caches and returns its writes,
// sorted: "create pod", "delete pod web-b", "patch pod web-x" (pod writes,
// whether through the clientset or PodControl), "create revision",
// "delete revision …", "status".
func (f *syncFixture) run() []string {
	f.t.Helper()
	if f.c == nil {
		objs := []runtime.Object{f.cs}
		for _, p := range f.pods {
			objs = append(objs, p)
		}
		for _, r := range f.revs {
			objs = append(objs, r)
		}
		f.Fakes = wiringtest.New(f.t, now, objs...)
		f.pc = podcontrol.NewFake()
		d := f.Deps()
		d.PodControl = f.pc
		d.Gates = features.MustNewGate(features.CloneSetShortHash, features.CloneSetPartitionRollback,
			features.PreDownloadImageForInPlaceUpdate, features.RecreatePodWhenChangeVCTInCloneSetGate)
		c, err := New(d)
		require.NoError(f.t, err)
		f.c = c
		f.t.Cleanup(c.Queue.ShutDown)
	}
	if !f.gone {
		f.Cache(f.cs)
	}
	for _, p := range f.pods {
		f.Cache(p)
	}
	for _, r := range f.revs {
		f.Cache(r)
	}
	f.Clear()
	f.pc.ClearActions()
	f.err = f.c.sync(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web"})
	return f.writes()
}

func (f *syncFixture) writes() []string {
	out := []string{}
	for _, a := range append(f.Kube.Actions(), f.Client.Actions()...) {
		what := map[string]string{"pods": "pod", "controllerrevisions": "revision", "clonesets": "status"}[a.GetResource().Resource]
		switch {
		case a.GetVerb() == "update" && a.GetSubresource() == "status":
			out = append(out, "status")
		case a.GetVerb() == "create" && what == "pod":
			out = append(out, "create pod")
		case a.GetVerb() == "create":
			out = append(out, "create "+what)
		case a.GetVerb() == "delete":
			out = append(out, "delete "+what+" "+a.(clienttesting.DeleteAction).GetName())
		case a.GetVerb() == "patch":
			out = append(out, "patch "+what+" "+a.(clienttesting.PatchAction).GetName())
		}
	}
	for _, a := range f.pc.Actions() {
		if a.Verb == podcontrol.VerbCreate {
			out = append(out, "create pod")
		} else {
			out = append(out, string(a.Verb)+" pod "+a.Name)
		}
	}
	slices.Sort(out)
	return out
}

// status is the status the sync wrote (zero if none).
func (f *syncFixture) status() appsv1alpha1.CloneSetStatus {
	for _, a := range f.Client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && u.GetSubresource() == "status" {
			return u.GetObject().(*appsv1alpha1.CloneSet).Status
		}
	}
	return appsv1alpha1.CloneSetStatus{}
}

func TestSyncNewCloneSetCreatesRevisionAndPods(t *testing.T) {
	f := newSyncFixture(t, 3)
	assert.Equal(t, []string{"create pod", "create pod", "create pod", "create revision", "status"}, f.run())
	require.NoError(t, f.err)
	s := f.status()
	assert.NotEmpty(t, s.UpdateRevision, "the new revision is reported")
	assert.Equal(t, int64(1), s.ObservedGeneration)

	// The creations are not in the cache yet: the next sync waits for
	// them rather than creating three more.
	f.revs = nil
	assert.Empty(t, f.run(), "expectations pending: nothing written")
}

func TestSyncSteadyCloneSetWritesNothingButStatus(t *testing.T) {
	f := newSyncFixture(t, 2)
	f.withRevision()
	f.pod("web-a", true)
	f.pod("web-b", true)
	writes := f.run()
	require.NoError(t, f.err)
	assert.Equal(t, []string{"status"}, writes, "no pod or revision write")
	assert.Equal(t, int32(2), f.status().AvailableReplicas)
}

func TestSyncScaleDownDeletesTheUnreadyPod(t *testing.T) {
	f := newSyncFixture(t, 1)
	f.withRevision()
	f.pod("web-a", true)
	f.pod("web-b", true, notReady())
	writes := f.run()
	require.NoError(t, f.err)
	assert.Contains(t, writes, "delete pod web-b")
	assert.NotContains(t, writes, "delete pod web-a")
	assert.NotContains(t, writes, "create pod")
}

func TestSyncAdoptsOrphanAndReleasesRelabelledPod(t *testing.T) {
	f := newSyncFixture(t, 2)
	f.withRevision()
	f.pod("web-a", true)
	f.pod("web-relabelled", true, withLabel("app", "debug"))
	f.pod("web-orphan", false)
	writes := f.run()
	require.NoError(t, f.err)
	assert.Contains(t, writes, "patch pod web-orphan", "adopted")
	assert.Contains(t, writes, "patch pod web-relabelled", "released")
	for _, a := range f.pc.Actions() {
		if a.Name == "web-relabelled" {
			assert.Contains(t, string(a.Patch), `"$patch":"delete"`, "the controllerRef is removed")
		}
	}
}

func TestSyncGoneCloneSetWritesNothing(t *testing.T) {
	f := newSyncFixture(t, 1)
	f.gone = true
	f.withRevision()
	f.pod("web-a", true)
	assert.Empty(t, f.run())
	assert.NoError(t, f.err)
}

func TestSyncTruncatesHistory(t *testing.T) {
	f := newSyncFixture(t, 1)
	f.cs.Spec.RevisionHistoryLimit = new(int32)
	old := f.withRevision()
	f.cs.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	f.cs.Generation = 2
	data, err := revision.TemplatePatch(&f.cs.Spec.Template)
	require.NoError(t, err)
	var cc int32
	cur := revision.New(f.cs, kindCloneSet, f.cs.Spec.Template.Labels, data, 2, &cc)
	f.revs = append(f.revs, cur)
	f.cs.Status.CurrentRevision, f.cs.Status.UpdateRevision = cur.Name, cur.Name
	p := f.pod("web-a", true)
	p.Labels[pub.ControllerRevisionHashLabelKey] = cur.Name
	writes := f.run()
	require.NoError(t, f.err)
	assert.Contains(t, writes, "delete revision "+old.Name, "no pod runs it, the limit is 0")
}
