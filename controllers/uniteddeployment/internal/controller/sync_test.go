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
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// fixture is a reconciler over fake clientsets whose caches the test fills by hand, so it decides when a write
// reaches the cache.
type fixture struct {
	*wiringtest.Fakes
	c *Controller
}

func newFixture(t *testing.T, ud *appsv1alpha1.UnitedDeployment) *fixture {
	t.Helper()
	f := &fixture{Fakes: wiringtest.New(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ud)}
	// The fake tracker does not generate names; the API server would.
	n := 0
	f.Client.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if m, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && m.GetName() == "" && m.GetGenerateName() != "" {
			n++
			m.SetName(fmt.Sprintf("%s%d", m.GetGenerateName(), n))
		}
		return false, nil, nil
	})
	c, err := New(f.Deps(), SubsetInformers{Kube: f.KubeInformers, Flotilla: f.Informers}, nil)
	require.NoError(t, err)
	t.Cleanup(c.Queue.ShutDown)
	f.c = c
	f.Cache(ud)
	return f
}

// creates counts the creates the client was asked for since the last call, by resource.
func (f *fixture) creates() map[string]int {
	out := map[string]int{}
	for _, a := range f.Actions() {
		if a.GetVerb() == "create" {
			out[a.GetResource().Resource]++
		}
	}
	f.Clear()
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
	f.Cache(next)
	require.NoError(t, f.c.sync(context.Background(), key))
	assert.Equal(t, 2, f.creates()["statefulsets"], "one Advanced StatefulSet per subset, without waiting for the CloneSets")

	require.NoError(t, f.c.sync(context.Background(), key))
	assert.Zero(t, f.creates()["statefulsets"], "and those are not created twice either")
}
