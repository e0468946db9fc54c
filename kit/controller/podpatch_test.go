package controller

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
)

// The pod patch (kit/podcontrol) is tested here, over the slimmed pods this
// package makes: a patch of the difference must never touch what the slim
// cache dropped.

// applyPatch is what the API server does with a strategic-merge patch.
func applyPatch(t *testing.T, pod *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	doc, err := json.Marshal(pod)
	require.NoError(t, err)
	doc, err = strategicpatch.StrategicMergePatch(doc, patch, corev1.Pod{})
	require.NoError(t, err)
	var out corev1.Pod
	require.NoError(t, json.Unmarshal(doc, &out))
	return &out
}

func TestPodPatchFromSlimPod(t *testing.T) {
	// As served: times decoded the way applyPatch decodes them.
	full := applyPatch(t, fullPod("web-a"), []byte("{}"))
	obj, err := SlimPod(full.DeepCopy())
	require.NoError(t, err)
	slim := obj.(*corev1.Pod)
	require.Nil(t, slim.Spec.Volumes)

	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		check  func(t *testing.T, got *corev1.Pod)
	}{
		{"image in place", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" },
			func(t *testing.T, got *corev1.Pod) {
				want := full.DeepCopy()
				want.Spec.Containers[0].Image = "nginx:1.28"
				assert.Equal(t, want.Spec, got.Spec, "env, mounts, probes, volumes kept")
			}},
		{"label set, annotation removed", func(p *corev1.Pod) {
			p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateUpdating)
			delete(p.Annotations, pub.InPlaceUpdateStateKey)
		}, func(t *testing.T, got *corev1.Pod) {
			assert.Equal(t, string(pub.LifecycleStateUpdating), got.Labels[pub.LifecycleStateKey])
			assert.NotContains(t, got.Annotations, pub.InPlaceUpdateStateKey)
			assert.Equal(t, full.Spec, got.Spec)
		}},
		{"condition changed", func(p *corev1.Pod) {
			p.Status.Conditions[1].Status = corev1.ConditionFalse
			p.Status.Conditions[1].Reason = "Held"
		}, func(t *testing.T, got *corev1.Pod) {
			assert.Equal(t, corev1.ConditionFalse, got.Status.Conditions[1].Status)
			assert.Equal(t, "Held", got.Status.Conditions[1].Reason)
			assert.Equal(t, corev1.ConditionTrue, got.Status.Conditions[0].Status)
			assert.Equal(t, full.Status.ContainerStatuses, got.Status.ContainerStatuses, "states, started kept")
			assert.Equal(t, full.Status.HostIP, got.Status.HostIP)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := slim.DeepCopy()
			tc.change(next)
			patch, err := podcontrol.PodPatch(slim, next)
			require.NoError(t, err)
			require.NotNil(t, patch)
			var meta struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			require.NoError(t, json.Unmarshal(patch, &meta))
			assert.Equal(t, "42", meta.Metadata.ResourceVersion, "guarded by the cached resourceVersion")
			tc.check(t, applyPatch(t, full, patch))
		})
	}

	patch, err := podcontrol.PodPatch(slim, slim.DeepCopy())
	require.NoError(t, err)
	assert.Nil(t, patch, "no change, no patch")
}

func TestPatchPod(t *testing.T) {
	ctx := context.Background()
	full := fullPod("web-a")
	client := fake.NewClientset(full.DeepCopy())
	next := full.DeepCopy()
	next.Status.Conditions[1].Status = corev1.ConditionFalse
	out, err := podclient.New(client).PatchStatus(ctx, full, next)
	require.NoError(t, err)
	assert.Equal(t, corev1.ConditionFalse, out.Status.Conditions[1].Status)
	require.Len(t, client.Actions(), 1)
	a := client.Actions()[0].(k8stesting.PatchAction)
	assert.Equal(t, "status", a.GetSubresource())

	client.ClearActions()
	same, err := podclient.New(client).Patch(ctx, full, full.DeepCopy())
	require.NoError(t, err)
	assert.Same(t, full, same)
	assert.Empty(t, client.Actions(), "nothing to write: no request")
}

// BenchmarkPodPatch is the cost of one pod write's patch (the pod loop's
// first write: two conditions and a label) on a slimmed pod.
func BenchmarkPodPatch(b *testing.B) {
	obj, err := SlimPod(fullPod("web-a"))
	require.NoError(b, err)
	pod := obj.(*corev1.Pod)
	next := pod.DeepCopy()
	next.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingNormal)
	next.Status.Conditions = append(next.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := podcontrol.PodPatch(pod, next); err != nil {
			b.Fatal(err)
		}
	}
}
