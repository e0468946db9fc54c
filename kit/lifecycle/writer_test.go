package lifecycle

import (
	"context"
	"errors"
	"testing"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func verbs(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		out = append(out, a.GetVerb()+"/"+a.GetSubresource())
	}
	return out
}

func stored(t *testing.T, c *fake.Clientset) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

func condition(p *corev1.Pod, ct corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ct {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func newWriter(c *fake.Clientset) *ClientWriter {
	return NewWriter(c, clocktesting.NewFakePassiveClock(now))
}

func TestWriterStatusThenMetadata(t *testing.T) {
	ctx := context.Background()
	cached := newPod(gated(), state(pub.LifecycleStateNormal), hookedLabel(), finalizer(otherFin))
	client := fake.NewClientset(cached.DeepCopy())
	before := cached.DeepCopy()

	d := Decide(&pub.Lifecycle{PreDelete: hook(true)}, cached, Request{Op: OpDelete}, now)
	require.Equal(t, ActionPatch, d.Action)
	got, err := newWriter(client).Patch(ctx, cached, d.Patch)
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, before, cached, "cached pod modified")

	// NotReady first, then the label that tells the hook's controller.
	assert.Equal(t, []string{"patch/status", "patch/"}, verbs(client))
	patch := client.Actions()[1].(k8stesting.PatchAction)
	assert.Equal(t, types.StrategicMergePatchType, patch.GetPatchType())

	p := stored(t, client)
	assert.Equal(t, got, p)
	assert.Equal(t, "PreparingDelete", p.Labels[pub.LifecycleStateKey])
	assert.Equal(t, "true", p.Labels[hookLabel], "other labels kept")
	assert.Equal(t, "demo", p.Labels["app"])
	assert.Equal(t, nowStamp, p.Annotations[pub.LifecycleTimestampKey])
	assert.Equal(t, []string{otherFin}, p.Finalizers)
	assert.Equal(t, []podreadiness.Key{PreDeleteKey()}, podreadiness.NotReadyKeys(p))
	assert.Equal(t, corev1.ConditionFalse, condition(p, podreadiness.ConditionType).Status)
	assert.Equal(t, corev1.ConditionFalse, condition(p, corev1.PodReady).Status)
}

func TestWriterReaddsHookFinalizersByMerge(t *testing.T) {
	ctx := context.Background()
	cached := newPod(state(pub.LifecycleStateUpdated), finalizer(otherFin))
	client := fake.NewClientset(cached.DeepCopy())
	d := Decide(&pub.Lifecycle{InPlaceUpdate: hook(false)}, cached, Request{Op: OpInPlaceUpdate}, now)
	require.Equal(t, ActionPatch, d.Action)

	_, err := newWriter(client).Patch(ctx, cached, d.Patch)
	require.NoError(t, err)
	assert.Equal(t, []string{"patch/"}, verbs(client), "no status write without readiness keys")
	p := stored(t, client)
	assert.Equal(t, "PreparingUpdate", p.Labels[pub.LifecycleStateKey])
	assert.Equal(t, "true", p.Labels[hookLabel])
	assert.ElementsMatch(t, []string{otherFin, hookFin}, p.Finalizers, "finalizers merged, not replaced")
	assert.True(t, IsAllHooked(hook(false), p))
}

func TestWriterNothingToWrite(t *testing.T) {
	client := fake.NewClientset(newPod())
	got, err := newWriter(client).Patch(context.Background(), newPod(), Patch{})
	require.NoError(t, err)
	assert.Nil(t, got)
	assert.Empty(t, client.Actions())

	// Readiness keys that turn out to be no-ops against the pod: no request.
	got, err = newWriter(client).Patch(context.Background(), newPod(), Patch{RemoveNotReady: []podreadiness.Key{PreUpdateKey()}})
	require.NoError(t, err)
	assert.Nil(t, got)
	assert.Empty(t, client.Actions())
}

func TestWriterStopsWhenStatusFails(t *testing.T) {
	cached := newPod(gated(), state(pub.LifecycleStateNormal), hookedLabel())
	client := fake.NewClientset(cached.DeepCopy())
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("boom")
	})
	d := Decide(&pub.Lifecycle{PreDelete: hook(true)}, cached, Request{Op: OpDelete}, now)
	_, err := newWriter(client).Patch(context.Background(), cached, d.Patch)
	require.ErrorContains(t, err, "boom")
	assert.Equal(t, []string{"patch/status"}, verbs(client), "state label must not be written when NotReady failed")
	assert.Equal(t, "Normal", stored(t, client).Labels[pub.LifecycleStateKey])
}

// TestInPlaceUpdateWalk drives a pod through a whole in-place update with a
// markPodNotReady inPlaceUpdate hook, playing the user's hook controller, the
// in-place update and the kubelet, and checks Ready at every step.
func TestInPlaceUpdateWalk(t *testing.T) {
	ctx := context.Background()
	lc := &pub.Lifecycle{InPlaceUpdate: hook(true)}
	client := fake.NewClientset(newPod(gated(), state(pub.LifecycleStateNormal), hookedLabel(), hookedFin()))
	w := newWriter(client)
	pods := client.CoreV1().Pods("ns")

	step := func(req Request, wantAction Action) {
		t.Helper()
		pod := stored(t, client)
		d := Decide(lc, pod, req, now)
		require.Equal(t, wantAction, d.Action, d.Reason)
		switch d.Action {
		case ActionPatch:
			_, err := w.Patch(ctx, pod, d.Patch)
			require.NoError(t, err)
		case ActionProceed: // the in-place update: new image + Updating in one write
			next := pod.DeepCopy()
			d.Patch.ApplyMetadata(next)
			next.Spec.Containers = []corev1.Container{{Name: "app", Image: "v2"}}
			_, err := pods.Update(ctx, next, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
	}
	user := func(mutate func(*corev1.Pod)) {
		t.Helper()
		pod := stored(t, client)
		mutate(pod)
		_, err := pods.Update(ctx, pod, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	check := func(wantState pub.LifecycleStateType, wantReady corev1.ConditionStatus) {
		t.Helper()
		pod := stored(t, client)
		assert.Equal(t, wantState, State(pod))
		assert.Equal(t, wantReady, condition(pod, corev1.PodReady).Status, "Ready in %s", wantState)
	}

	update := Request{Op: OpInPlaceUpdate}
	check(pub.LifecycleStateNormal, corev1.ConditionTrue)

	step(update, ActionPatch) // hooked → PreparingUpdate, NotReady
	check(pub.LifecycleStatePreparingUpdate, corev1.ConditionFalse)
	step(update, ActionWait)

	user(func(p *corev1.Pod) { delete(p.Labels, hookLabel); p.Finalizers = nil }) // pre-update work done
	step(update, ActionProceed)
	check(pub.LifecycleStateUpdating, corev1.ConditionFalse)

	step(Request{Op: OpBecomeNormal}, ActionWait) // containers restarting
	step(Request{Op: OpBecomeNormal, UpdateCompleted: true}, ActionPatch)
	check(pub.LifecycleStateUpdated, corev1.ConditionTrue) // key released
	step(Request{Op: OpBecomeNormal, UpdateCompleted: true}, ActionWait)

	user(func(p *corev1.Pod) { p.Labels[hookLabel] = "true"; p.Finalizers = []string{hookFin} }) // post-update work done
	step(Request{Op: OpBecomeNormal}, ActionPatch)
	check(pub.LifecycleStateNormal, corev1.ConditionTrue)
	step(Request{Op: OpBecomeNormal}, ActionNone)
	assert.Empty(t, podreadiness.NotReadyKeys(stored(t, client)))
}
