package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// fixture is a reconciler over fake clientsets whose caches the test fills by hand, so it decides when a write
// reaches the cache.
type fixture struct {
	c      *Controller
	client *fake.Clientset
	udInf  flotillainformers.SharedInformerFactory
}

func newFixture(t *testing.T, ud *appsv1alpha1.UnitedDeployment) *fixture {
	t.Helper()
	kube := kubefake.NewClientset()
	client := fake.NewSimpleClientset(ud) //nolint:staticcheck // NewClientset lacks the CRD schemas for its field manager
	// The fake tracker does not generate names; the API server would.
	n := 0
	client.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject()
		if m, err := metaOf(obj); err == nil && m.GetName() == "" && m.GetGenerateName() != "" {
			n++
			m.SetName(fmt.Sprintf("%s%d", m.GetGenerateName(), n))
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := &fixture{client: client, udInf: flotillainformers.NewSharedInformerFactory(client, 0)}
	c, err := New(wiring.Deps{Kube: kube, Client: client, KubeInformers: informers.NewSharedInformerFactory(kube, 0),
		Informers: f.udInf, Clock: clk, Recorder: record.NewFakeRecorder(100),
		QueueOptions: controller.DefaultQueueOptions(), QueueConfig: controller.QueueConfig{Clock: clk}},
		NewSubsetInformers(kube, client, ""), nil)
	require.NoError(t, err)
	t.Cleanup(c.Queue.ShutDown)
	f.c = c
	f.setUD(t, ud)
	return f
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object meta", obj)
	}
	return m, nil
}

// setUD puts ud in the UnitedDeployment cache, as the informer would after a change.
func (f *fixture) setUD(t *testing.T, ud *appsv1alpha1.UnitedDeployment) {
	t.Helper()
	require.NoError(t, f.udInf.Apps().V1alpha1().UnitedDeployments().Informer().GetIndexer().Update(ud))
}

// creates returns the kinds of the workloads the client was asked to create since the last call, by resource.
func (f *fixture) creates() map[string]int {
	out := map[string]int{}
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "create" {
			out[a.GetResource().Resource]++
		}
	}
	f.client.ClearActions()
	return out
}

func twoSubsetUD() *appsv1alpha1.UnitedDeployment {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mixed"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.local/mixed:v1"}}},
	}
	return &appsv1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "mixed", Namespace: "ns", UID: "ud-uid", Generation: 1},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mixed"}},
			Template: appsv1alpha1.SubsetTemplate{CloneSetTemplate: &appsv1alpha1.CloneSetTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mixed"}},
				Spec:       appsv1alpha1.CloneSetSpec{Template: tmpl},
			}},
			Topology: appsv1alpha1.Topology{Subsets: []appsv1alpha1.Subset{{Name: "a"}, {Name: "b"}}},
		},
	}
}

// Subset workloads created but not in the cache yet are not created again; but when the template's kind changes
// before the cache shows them, the new kind's workloads are created at once: a workload of the old kind is stale
// (deleted when seen) and cannot stand for its subset. Before the fix the new kind's creates waited for the old
// ones' expectations to time out (CI: TestCloneSetAndAdvancedStatefulSetSubsets timed out).
func TestSyncKindChangeWhileCreatesPending(t *testing.T) {
	ud := twoSubsetUD()
	f := newFixture(t, ud)
	key := types.NamespacedName{Namespace: ud.Namespace, Name: ud.Name}

	require.NoError(t, f.c.sync(context.Background(), key))
	assert.Equal(t, 2, f.creates()["clonesets"], "one CloneSet per subset")

	require.NoError(t, f.c.sync(context.Background(), key))
	assert.Zero(t, f.creates()["clonesets"], "the CloneSets are not in the cache yet: not created twice")

	// The template switches to Advanced StatefulSet while the CloneSets are still on their way to the cache.
	next := ud.DeepCopy()
	next.Generation = 2
	next.Spec.Template = appsv1alpha1.SubsetTemplate{AdvancedStatefulSetTemplate: &appsv1alpha1.AdvancedStatefulSetTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mixed"}},
		Spec:       appsv1beta1.StatefulSetSpec{Template: ud.Spec.Template.CloneSetTemplate.Spec.Template},
	}}
	f.setUD(t, next)
	require.NoError(t, f.c.sync(context.Background(), key))
	assert.Equal(t, 2, f.creates()["statefulsets"], "one Advanced StatefulSet per subset, without waiting for the CloneSets")

	require.NoError(t, f.c.sync(context.Background(), key))
	assert.Zero(t, f.creates()["statefulsets"], "and those are not created twice either")
}
