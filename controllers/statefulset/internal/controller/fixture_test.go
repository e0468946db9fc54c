package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	flotillafake "github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// syncFixture is one Advanced StatefulSet "web" in namespace "ns" with its
// revisions and pods, as the informer caches would show them. run builds a
// controller over fake clientsets holding exactly these objects, seeds its
// indexers, runs one sync and returns the writes it made.
//
// The set starts with template image "db:v1" (revision "old"), status
// currentRevision = that revision, and every pod Running, Ready for an
// hour, on node-1. rollTo changes the template, adding the revision it
// resolves to; pods are placed at a revision with pods().
type syncFixture struct {
	t     *testing.T
	set   *appsv1beta1.StatefulSet
	revs  []*appsv1.ControllerRevision
	pods  []*corev1.Pod
	gates map[featuregate.Feature]bool
	extra []runtime.Object // more Flotilla objects (ImagePullJobs)
	// prepare, if set, adds reactors to the Kubernetes client before the sync.
	prepare func(*kubefake.Clientset)

	// After run: the fake clients (wiringtest's) and what the sync recorded.
	kube   *kubefake.Clientset
	client *flotillafake.Clientset
	events []string
	err    error
}

type setOpt func(*appsv1beta1.StatefulSet)

func newSyncFixture(t *testing.T, replicas int32, opts ...setOpt) *syncFixture {
	t.Helper()
	set := &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web", Generation: 1},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: "web",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "db:v1"}}},
			},
			UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{},
			},
			RevisionHistoryLimit: ptr.To(int32(10)),
		},
		Status: appsv1beta1.StatefulSetStatus{ObservedGeneration: 1},
	}
	for _, o := range opts {
		o(set)
	}
	f := &syncFixture{t: t, set: set, gates: map[featuregate.Feature]bool{}}
	f.set.Status.CurrentRevision = f.addRevision().Name
	return f
}

// addRevision adds the revision of the set's current template.
func (f *syncFixture) addRevision() *appsv1.ControllerRevision {
	f.t.Helper()
	data, err := revision.TemplatePatch(&f.set.Spec.Template)
	require.NoError(f.t, err)
	if eq := revision.FindEqual(f.revs, data); len(eq) > 0 {
		return eq[0] // no template change
	}
	var cc int32
	r := revision.New(f.set, kindStatefulSet, f.set.Spec.Template.Labels, data, revision.NextRevisionNumber(f.revs), &cc)
	f.revs = append(f.revs, r)
	return r
}

// rollTo changes the template with mutate (as a user's edit would) and
// returns the name of the new update revision.
func (f *syncFixture) rollTo(mutate func(*corev1.PodTemplateSpec)) string {
	f.set.Generation++
	mutate(&f.set.Spec.Template)
	return f.addRevision().Name
}

// rev is the name of revision i (0: the first).
func (f *syncFixture) rev(i int) string { return f.revs[i].Name }

// addPods adds pods of the given ordinals, built from revision rev as the
// controller would create them, Running and Ready.
func (f *syncFixture) addPods(rev string, ordinals ...int) {
	f.t.Helper()
	var r *appsv1.ControllerRevision
	for _, x := range f.revs {
		if x.Name == rev {
			r = x
		}
	}
	require.NotNil(f.t, r, "revision %s", rev)
	tmpl, err := revision.Template(r)
	require.NoError(f.t, err)
	for _, o := range ordinals {
		p := newPod(f.set, r, tmpl, o, true)
		p.UID = types.UID(fmt.Sprintf("uid-%s", p.Name))
		p.Spec.NodeName = "node-1"
		since := metav1.NewTime(t0.Add(-time.Hour))
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: since}}
		for _, g := range p.Spec.ReadinessGates {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: g.ConditionType, Status: corev1.ConditionTrue, LastTransitionTime: since})
		}
		f.pods = slices.DeleteFunc(f.pods, func(x *corev1.Pod) bool { return x.Name == p.Name })
		f.pods = append(f.pods, p)
	}
}

// pod returns the fixture's pod of that ordinal, to adjust.
func (f *syncFixture) pod(ordinal int) *corev1.Pod {
	for _, p := range f.pods {
		if p.Name == podName("web", ordinal) {
			return p
		}
	}
	f.t.Fatalf("no pod %d", ordinal)
	return nil
}

// run runs one sync over fresh clients and caches holding the fixture's
// objects and returns the pod writes it made, sorted: "delete web-3",
// "inplace web-3" (the pod updated with a new template), "status web-3"
// (pods/status), "patch web-3".
func (f *syncFixture) run() []string {
	f.t.Helper()
	objs := append(append([]runtime.Object{f.set}, objects(f.pods)...), objects(f.revs)...)
	fakes := wiringtest.New(f.t, t0, append(objs, f.extra...)...)
	f.kube, f.client = fakes.Kube, fakes.Client
	if f.prepare != nil {
		f.prepare(f.kube)
	}
	gate := features.MustNewGate(features.StatefulSetAutoDeletePVC, features.StatefulSetStartOrdinal, features.PodIndexLabel,
		features.InPlaceUpdateEnvFromMetadata, features.PreDownloadImageForInPlaceUpdate, features.KruiseDaemon)
	for g, v := range f.gates {
		require.NoError(f.t, gate.SetFromMap(map[string]bool{string(g): v}))
	}
	_, err := features.Resolve(gate)
	require.NoError(f.t, err)
	fakes.Recorder = record.NewFakeRecorder(4 * burstReplicas) // room for a burst of creations; a full recorder blocks
	d := fakes.Deps()
	d.Gates = gate
	c, err := New(d)
	require.NoError(f.t, err)
	fakes.Cache(objs...)
	if f.gates[features.PreDownloadImageForInPlaceUpdate] {
		fakes.Cache(f.extra...) // their informer is requested only under the gate
	}
	fakes.Clear()

	f.err = c.sync(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web"})
	f.events = fakes.Events()
	return podWrites(f.kube.Actions())
}

// objects is items as runtime.Objects, for fake clientsets and informers.
func objects[T runtime.Object](items []T) []runtime.Object {
	out := make([]runtime.Object, 0, len(items))
	for _, o := range items {
		out = append(out, o)
	}
	return out
}

// podWrites summarises the pod writes among actions, sorted.
func podWrites(actions []clienttesting.Action) []string {
	out := []string{}
	for _, a := range actions {
		if a.GetResource().Resource != "pods" {
			continue
		}
		var what, name string
		switch a := a.(type) {
		case clienttesting.DeleteAction:
			what, name = "delete", a.GetName()
		case clienttesting.UpdateAction:
			what, name = "inplace", a.GetObject().(metav1.Object).GetName()
			if a.GetSubresource() == "status" {
				what = "status"
			}
		case clienttesting.PatchAction:
			// kit/inplace writes its changes as patches too: tell them from the
			// lifecycle and adoption patches by the subresource and the
			// in-place state they set.
			what, name = "patch", a.GetName()
			switch {
			case a.GetSubresource() == "status":
				what = "status"
			case strings.Contains(string(a.GetPatch()), pub.InPlaceUpdateStateKey):
				what = "inplace"
			}
		case clienttesting.CreateAction:
			what, name = "create", a.GetObject().(metav1.Object).GetName()
		default:
			continue
		}
		out = append(out, what+" "+name)
	}
	slices.Sort(out)
	return out
}

// flotillaWrites lists the writes to Flotilla objects as "verb resource[/sub]".
func (f *syncFixture) flotillaWrites() []string {
	out := []string{}
	for _, a := range f.client.Actions() {
		if v := a.GetVerb(); v == "get" || v == "list" || v == "watch" {
			continue
		}
		r := a.GetResource().Resource
		if s := a.GetSubresource(); s != "" {
			r += "/" + s
		}
		out = append(out, a.GetVerb()+" "+r)
	}
	return out
}

// event reports whether an event starting with prefix ("Warning Reason")
// was recorded.
func (f *syncFixture) event(prefix string) bool {
	return slices.ContainsFunc(f.events, func(e string) bool { return strings.HasPrefix(e, prefix) })
}

// Set options.
func parallelPods(s *appsv1beta1.StatefulSet) {
	s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
}

func withRolling(mutate func(*appsv1beta1.RollingUpdateStatefulSetStrategy)) setOpt {
	return func(s *appsv1beta1.StatefulSet) { mutate(s.Spec.UpdateStrategy.RollingUpdate) }
}

func podUpdatePolicy(p appsv1beta1.PodUpdateStrategyType) setOpt {
	return withRolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.PodUpdatePolicy = p })
}

// inPlaceGate puts the InPlaceUpdateReady readiness gate into the template.
func inPlaceGate(s *appsv1beta1.StatefulSet) {
	s.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
}

// Template changes.
func image(img string) func(*corev1.PodTemplateSpec) {
	return func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = img }
}

// envChange cannot be applied in place.
func envChange(t *corev1.PodTemplateSpec) {
	t.Spec.Containers[0].Env = append(t.Spec.Containers[0].Env, corev1.EnvVar{Name: "MODE", Value: "new"})
}
