package controller

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillafake "github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// syncFixture is one DaemonSet "ds" in namespace "ns" over nodes and pods
// as the caches show them; sync runs the controller's sync once and returns
// the pod writes it made ("create <node>", "delete <pod>").
type syncFixture struct {
	t     *testing.T
	ds    *appsv1alpha1.DaemonSet
	nodes []*corev1.Node
	pods  []*corev1.Pod
	c     *Controller
	kube  *kubefake.Clientset
}

func newSyncFixture(t *testing.T, nodes ...string) *syncFixture {
	ds := dsWith(func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ds"}}
		ds.Spec.Template.Labels = map[string]string{"app": "ds"}
		ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "a:1"}}
	})
	f := &syncFixture{t: t, ds: ds}
	for _, n := range nodes {
		f.nodes = append(f.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return f
}

// hash is the revision hash of the DaemonSet's current template.
func (f *syncFixture) hash() string {
	data, err := revision.TemplatePatch(&f.ds.Spec.Template)
	require.NoError(f.t, err)
	return revision.Hash(data, nil)
}

// addPod adds a Ready pod of the current template on node.
func (f *syncFixture) addPod(name, node string) {
	p := pod(name, node, f.hash(), 0)
	p.Labels["app"] = "ds"
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(f.ds, kindDaemonSet)}
	f.pods = append(f.pods, p)
}

// start builds the controller over fake clients holding the fixture.
func (f *syncFixture) start() {
	objs := []runtime.Object{}
	for _, n := range f.nodes {
		objs = append(objs, n)
	}
	for _, p := range f.pods {
		objs = append(objs, p)
	}
	f.kube = kubefake.NewClientset(objs...)
	client := flotillafake.NewSimpleClientset(f.ds)
	d := Deps{
		Kube: f.kube, Client: client,
		KubeInformers: informers.NewSharedInformerFactory(f.kube, 0),
		Informers:     flotillainformers.NewSharedInformerFactory(client, 0),
		Clock:         clocktesting.NewFakeClock(t0.Add(3600e9)),
		Recorder:      record.NewFakeRecorder(1000),
		QueueOptions:  kitcontroller.DefaultQueueOptions(),
	}
	c, err := New(d)
	require.NoError(f.t, err)
	require.NoError(f.t, d.Informers.Apps().V1alpha1().DaemonSets().Informer().GetIndexer().Add(f.ds))
	for _, n := range f.nodes {
		require.NoError(f.t, d.KubeInformers.Core().V1().Nodes().Informer().GetIndexer().Add(n))
	}
	for _, p := range f.pods {
		require.NoError(f.t, d.KubeInformers.InformerFor(&corev1.Pod{}, nil).GetIndexer().Add(p))
	}
	f.c = c
}

func (f *syncFixture) sync() []string {
	f.t.Helper()
	f.kube.ClearActions()
	require.NoError(f.t, f.c.sync(context.Background(), types.NamespacedName{Namespace: "ns", Name: "ds"}))
	out := []string{}
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource != "pods" || a.GetSubresource() != "" {
			continue
		}
		switch a := a.(type) {
		case clienttesting.CreateAction:
			out = append(out, "create "+nodeplacement.TargetNode(a.GetObject().(*corev1.Pod)))
		case clienttesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// TestSyncBurstReplicas: one sync creates at most burstReplicas pods,
// lowest node names first; the next sync goes on with the rest.
func TestSyncBurstReplicas(t *testing.T) {
	f := newSyncFixture(t, "e", "d", "c", "b", "a")
	f.ds.Spec.BurstReplicas = iop("2")
	f.start()
	assert.Equal(t, []string{"create a", "create b"}, f.sync())
}

// TestSyncPendingCreation: a node whose pod was created but is not in the
// cache yet gets no second pod; the other nodes are not held back.
func TestSyncPendingCreation(t *testing.T) {
	f := newSyncFixture(t, "a", "b", "c")
	f.ds.Spec.BurstReplicas = iop("2")
	f.start()
	assert.Equal(t, []string{"create a", "create b"}, f.sync())
	assert.Equal(t, []string{"create c"}, f.sync(), "a and b are expected, c is not")
	assert.Empty(t, f.sync())
}

// TestSyncRollingUpdateWaitsForManage: while manage creates pods the
// rolling update takes no step in the same sync (its budget would be
// computed without them).
func TestSyncRollingUpdateWaitsForManage(t *testing.T) {
	f := newSyncFixture(t, "a", "b", "c")
	f.ds.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: iop("3")}
	f.addPod("pa", "a")
	f.addPod("pb", "b")
	f.ds.Spec.Template.Spec.Containers[0].Image = "a:2" // pa and pb are now old
	f.start()
	assert.Equal(t, []string{"create c"}, f.sync())
	// Next sync, the cache still without c's pod: the creation is pending,
	// the update still waits.
	assert.Empty(t, f.sync())
}

// TestSyncRollingUpdate: with the placement done, old pods are replaced
// within maxUnavailable, highest node names first.
func TestSyncRollingUpdate(t *testing.T) {
	f := newSyncFixture(t, "a", "b", "c")
	f.ds.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: iop("2")}
	f.addPod("pa", "a")
	f.addPod("pb", "b")
	f.addPod("pc", "c")
	f.ds.Spec.Template.Spec.Containers[0].Image = "a:2"
	f.start()
	assert.Equal(t, []string{"delete pb", "delete pc"}, f.sync())
}
