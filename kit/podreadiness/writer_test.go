package podreadiness

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func getPod(t *testing.T, c *fake.Clientset) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

// verbs lists "verb/subresource" of the client's recorded actions.
func verbs(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		out = append(out, a.GetVerb()+"/"+a.GetSubresource())
	}
	return out
}

func TestWriterAddAndRemove(t *testing.T) {
	ctx := context.Background()
	cached := readyPod()
	client := fake.NewClientset(cached.DeepCopy())
	w := NewWriter(client, clocktesting.NewFakePassiveClock(now))
	before := cached.DeepCopy()

	got, err := w.AddNotReadyKey(ctx, cached, lifecycleDelete)
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, before, cached, "cached pod modified")
	assert.Equal(t, []string{"patch/status"}, verbs(client))

	stored := getPod(t, client)
	assert.Equal(t, []Key{lifecycleDelete}, NotReadyKeys(stored))
	assert.Equal(t, corev1.ConditionFalse, GetCondition(stored).Status)
	assert.True(t, now.Equal(GetCondition(stored).LastTransitionTime.Time), "lastTransitionTime %v", GetCondition(stored).LastTransitionTime)
	assert.Equal(t, corev1.ConditionFalse, findCondition(stored.Status.Conditions, corev1.PodReady).Status)
	assert.Equal(t, stored.Status.Conditions, got.Status.Conditions)

	// Adding it again (from the fresh copy) makes no request.
	client.ClearActions()
	got, err = w.AddNotReadyKey(ctx, stored, lifecycleDelete)
	require.NoError(t, err)
	assert.Nil(t, got)
	assert.Empty(t, client.Actions())

	got, err = w.RemoveNotReadyKey(ctx, stored, lifecycleDelete)
	require.NoError(t, err)
	require.NotNil(t, got)
	stored = getPod(t, client)
	assert.Equal(t, corev1.ConditionTrue, GetCondition(stored).Status)
	assert.Equal(t, "[]", GetCondition(stored).Message)
	assert.Equal(t, corev1.ConditionTrue, findCondition(stored.Status.Conditions, corev1.PodReady).Status)
}

// A stale cached pod conflicts; the writer re-reads the pod, keeps the key
// another writer added meanwhile, and writes both.
func TestWriterRetriesOnConflictKeepingOtherKeys(t *testing.T) {
	ctx := context.Background()
	cached := readyPod()
	live := withKruise(readyPod(), kruiseCond(corev1.ConditionFalse, `[{"userAgent":"ContainerRecreateRequest","key":"crr-1"}]`), corev1.ConditionFalse)
	live.ResourceVersion = "8"
	client := fake.NewClientset(live)
	conflicts := 0
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		// The fake client does not check preconditions: the patch must carry
		// the resourceVersion it was computed from, and only the re-read one
		// is current.
		var patch struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &patch))
		if patch.Metadata.ResourceVersion != "8" {
			conflicts++
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", nil)
		}
		return false, nil, nil
	})
	w := NewWriter(client, clocktesting.NewFakePassiveClock(now))

	got, err := w.AddNotReadyKey(ctx, cached, lifecycleUpdate)
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, 1, conflicts)
	assert.Equal(t, []string{"patch/status", "get/", "patch/status"}, verbs(client))
	assert.Equal(t, []Key{crr, lifecycleUpdate}, NotReadyKeys(getPod(t, client)))
	assert.Equal(t, "7", cached.ResourceVersion, "cached pod modified")
}

// Re-reading can show the work is already done: then nothing is written.
func TestWriterConflictThenNothingToDo(t *testing.T) {
	ctx := context.Background()
	cached := readyPod()
	live := withKruise(readyPod(), kruiseCond(corev1.ConditionFalse, `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`), corev1.ConditionFalse)
	client := fake.NewClientset(live)
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", nil)
	})
	got, err := NewWriter(client, nil).AddNotReadyKey(ctx, cached, lifecycleUpdate)
	require.NoError(t, err)
	assert.Nil(t, got)
	assert.Equal(t, []string{"patch/status", "get/"}, verbs(client))
}

func TestWriterReturnsOtherErrors(t *testing.T) {
	client := fake.NewClientset() // pod does not exist
	got, err := NewWriter(client, nil).AddNotReadyKey(context.Background(), readyPod(), lifecycleDelete)
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	assert.Nil(t, got)
}
