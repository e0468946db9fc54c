package podclient

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/podcontrol"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7",
			Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}},
	}
}

// TestRealWrites: each verb reaches the clientset as the house rules say
// (UID precondition, difference-only patch guarded by resourceVersion,
// status subresource, dry run, owner patches), and an unchanged pod costs
// no request.
func TestRealWrites(t *testing.T) {
	ctx := context.Background()
	a, b := pod("a"), pod("b")
	client := fake.NewClientset(a.DeepCopy(), b.DeepCopy())
	pc := New(client)

	next := a.DeepCopy()
	next.Labels["x"] = "y"
	out, err := pc.Patch(ctx, a, next)
	require.NoError(t, err)
	assert.Equal(t, "y", out.Labels["x"])
	same, err := pc.Patch(ctx, a, a.DeepCopy())
	require.NoError(t, err)
	assert.Same(t, a, same)
	next = a.DeepCopy()
	next.Status.Phase = corev1.PodRunning
	_, err = pc.PatchStatus(ctx, a, next)
	require.NoError(t, err)
	require.NoError(t, pc.DryRunPatch(ctx, a, next))
	_, err = pc.PatchBytes(ctx, a, types.MergePatchType, []byte(`{"metadata":{"annotations":{"k":"v"}}}`))
	require.NoError(t, err)
	_, err = pc.Adopt(ctx, a, metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "cs", Controller: ptr.To(true)})
	require.NoError(t, err)
	_, err = pc.Release(ctx, a, "cs")
	require.NoError(t, err)
	require.NoError(t, pc.Delete(ctx, b, nil))
	created, err := pc.Create(ctx, pod("c"), nil)
	require.NoError(t, err)
	assert.Equal(t, "c", created.Name)

	acts := client.Actions()
	require.Len(t, acts, 8)
	p := acts[0].(k8stesting.PatchAction)
	assert.Equal(t, types.StrategicMergePatchType, p.GetPatchType())
	assert.JSONEq(t, `{"metadata":{"labels":{"x":"y"},"resourceVersion":"7"}}`, string(p.GetPatch()))
	assert.Equal(t, "status", acts[1].GetSubresource())
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"7"},"status":{"phase":"Running"}}`, string(acts[1].(k8stesting.PatchAction).GetPatch()))
	assert.Equal(t, []string{metav1.DryRunAll}, acts[2].(k8stesting.PatchActionImpl).GetPatchOptions().DryRun)
	assert.Equal(t, types.MergePatchType, acts[3].(k8stesting.PatchAction).GetPatchType())
	assert.JSONEq(t, `{"metadata":{"ownerReferences":[{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","name":"web","uid":"cs","controller":true}],"uid":"uid-a"}}`,
		string(acts[4].(k8stesting.PatchAction).GetPatch()))
	assert.JSONEq(t, `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"cs"}],"uid":"uid-a"}}`, string(acts[5].(k8stesting.PatchAction).GetPatch()))
	d := acts[6].(k8stesting.DeleteActionImpl)
	assert.Equal(t, "b", d.GetName())
	require.NotNil(t, d.GetDeleteOptions().Preconditions)
	assert.Equal(t, types.UID("uid-b"), *d.GetDeleteOptions().Preconditions.UID)
	assert.Equal(t, "create", acts[7].GetVerb())
}

// TestOr: a PodControl given (a sync test's Fake) wins; none means the
// clientset's.
func TestOr(t *testing.T) {
	client := fake.NewClientset(pod("a"))
	f := podcontrol.NewFake()
	require.NoError(t, Or(f, client).Delete(context.Background(), pod("a"), nil))
	assert.Len(t, f.Actions(), 1)
	assert.Empty(t, client.Actions())

	require.NoError(t, Or(nil, client).Delete(context.Background(), pod("a"), nil))
	require.Len(t, client.Actions(), 1)
	assert.Equal(t, "delete", client.Actions()[0].GetVerb())
}

// TestClockedFresh: NewClocked defaults to the real clock, writes through
// the clientset and Fresh reads the pod from it, not from the copy given.
func TestClockedFresh(t *testing.T) {
	stored := pod("a")
	stored.ResourceVersion = "9"
	client := fake.NewClientset(stored)
	c := NewClocked(client, nil)
	assert.Equal(t, clock.RealClock{}, c.Clock)
	got, err := c.Fresh(context.Background(), pod("a"))
	require.NoError(t, err)
	assert.Equal(t, "9", got.ResourceVersion)
	require.NoError(t, c.Pods.Delete(context.Background(), got, nil))
	assert.Equal(t, []string{"get", "delete"}, []string{client.Actions()[0].GetVerb(), client.Actions()[1].GetVerb()})
}
