package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/barrier"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// orderedPod is an Ordered pod of two containers as the webhook leaves it: container i waits on key p_-i of its
// barrier.
func orderedPod(name string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "pod-uid",
		Annotations: map[string]string{pub.ContainerLaunchPriorityKey: "Ordered"}}}
	for i, c := range []string{"a", "b"} {
		key := "p_0"
		if i > 0 {
			key = "p_-1"
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "busybox", Env: []corev1.EnvVar{{
			Name: pub.ContainerLaunchBarrierEnvName, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: barrier.Name(name)}, Key: key}},
		}}})
	}
	return p
}

// A barrier this controller created and the cache does not show yet is not created again: the next sync waits
// for the cache (the create expectation), and goes on once the barrier's informer event settled it. The
// expectation is asked before the cache is read, so a barrier arriving between the two reads is never missed.
func TestSyncCreatedBarrierNotCreatedAgain(t *testing.T) {
	pod := orderedPod("web")
	f := wiringtest.New(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), pod)
	c, err := New(f.Deps())
	require.NoError(t, err)
	t.Cleanup(c.Queue.ShutDown)
	f.Cache(pod)
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	writes := func() []string { defer f.Clear(); return f.Writes() }

	require.NoError(t, c.sync(context.Background(), key))
	assert.Equal(t, []string{"create configmaps " + barrier.Name("web")}, writes(), "the barrier, with the first key")

	// The barrier is not in the cache yet: before the fix this sync created it a second time.
	require.NoError(t, c.sync(context.Background(), key))
	assert.Empty(t, writes(), "no second create while the cache is behind our own")

	// The informer stores the barrier, then its handler settles the expectation.
	cm, err := f.Kube.CoreV1().ConfigMaps("ns").Get(context.Background(), barrier.Name("web"), metav1.GetOptions{})
	require.NoError(t, err)
	f.Clear()
	f.Cache(cm)
	c.barrierAdded(cm)
	require.NoError(t, c.sync(context.Background(), key))
	assert.Empty(t, writes(), "the barrier is there and no container is ready: nothing to write")
	ok, _ := c.creates.Satisfied(key)
	assert.True(t, ok)

	// A failed create leaves nothing to wait for.
	f.Kube.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, assert.AnError
	})
	other := orderedPod("other")
	f.Cache(other)
	otherKey := types.NamespacedName{Namespace: "ns", Name: "other"}
	require.Error(t, c.sync(context.Background(), otherKey))
	ok, _ = c.creates.Satisfied(otherKey)
	assert.True(t, ok, "a create that failed is not waited for")
}
