package testenv

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// Objects runs against the generated clients' shape; client-go's fake
// clientset stands in for the API server.
func TestObjects(t *testing.T) {
	kube := fake.NewClientset()
	deps := ObjectsOf(t, kube.AppsV1().Deployments("ns"), 10*time.Second)

	created := deps.Create(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}})
	assert.Equal(t, "web", created.Name)
	assert.Equal(t, int32(1), *deps.Get("web").Spec.Replicas)

	// Modify reads again after a conflict, so the mutation applies to the
	// latest object.
	var conflicts atomic.Int32
	kube.PrependReactor("update", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "" && conflicts.Add(1) == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", nil)
		}
		return false, nil, nil
	})
	calls := 0
	got := deps.Modify("web", func(d *appsv1.Deployment) { calls++; d.Spec.Replicas = ptr.To[int32](3) })
	assert.Equal(t, 2, calls, "retried after the conflict")
	assert.Equal(t, int32(3), *got.Spec.Replicas)
	assert.Equal(t, int32(3), *deps.Get("web").Spec.Replicas)

	deps.ModifyStatus("web", func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 3 })
	assert.Equal(t, int32(3), deps.Get("web").Status.ReadyReplicas)

	// WaitFor polls until the condition holds: here the status moves on at
	// every read, and an object that does not exist yet is waited for.
	var reads atomic.Int32
	kube.PrependReactor("get", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.GetAction).GetName() != "later" {
			return false, nil, nil
		}
		n := reads.Add(1)
		if n < 2 {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "later")
		}
		return true, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "ns"}, Status: appsv1.DeploymentStatus{ReadyReplicas: n}}, nil
	})
	d := deps.WaitFor("later", "4 ready", func(d *appsv1.Deployment) bool { return d.Status.ReadyReplicas >= 4 })
	require.NotNil(t, d)
	assert.Equal(t, int32(4), d.Status.ReadyReplicas)

	// WaitGone polls until a Get answers NotFound: here the object is
	// deleted by another party after the first reads.
	var goneReads atomic.Int32
	kube.PrependReactor("get", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.GetAction).GetName() == "web" && goneReads.Add(1) == 3 {
			require.NoError(t, kube.Tracker().Delete(a.GetResource(), "ns", "web"))
		}
		return false, nil, nil
	})
	deps.WaitGone("web")
	assert.GreaterOrEqual(t, goneReads.Load(), int32(3), "waited while the object existed")
}

func TestLive(t *testing.T) {
	gone := metav1.Now()
	items := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", DeletionTimestamp: &gone}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
	}
	live := Live(items)
	require.Len(t, live, 2)
	assert.Equal(t, "a", live[0].Name)
	assert.Equal(t, "c", live[1].Name)
	assert.Empty(t, Live([]corev1.Pod(nil)))
}
