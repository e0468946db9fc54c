package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// TestStatusAndScaleSubresource: every status field, written only when it
// changes, and the /scale subresource (what kubectl scale and an HPA use).
func TestStatusAndScaleSubresource(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("st", 2, parallel))
	set := h.waitStatus("st", "settled", settled(2))
	s := set.Status
	assert.Equal(t, set.Generation, s.ObservedGeneration)
	assert.Equal(t, int32(2), s.UpdatedReadyReplicas)
	assert.Equal(t, int32(2), s.UpdatedAvailableReplicas)
	assert.Equal(t, "app=st", s.LabelSelector)
	assert.NotEmpty(t, s.UpdateRevision)
	require.NotNil(t, s.CollisionCount)
	assert.Equal(t, int32(0), *s.CollisionCount)

	ctx := context.Background()
	scale, err := h.Client.AppsV1beta1().StatefulSets(h.NS).GetScale(ctx, "st", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), scale.Status.Replicas)
	assert.Equal(t, "app=st", scale.Status.Selector)
	scale.Spec.Replicas = 4
	_, err = h.Client.AppsV1beta1().StatefulSets(h.NS).UpdateScale(ctx, "st", scale, metav1.UpdateOptions{})
	require.NoError(t, err)
	h.waitPods("st", "scaled through /scale", readyNames("st-0", "st-1", "st-2", "st-3"))
	settledSet := h.waitStatus("st", "settled at 4", settled(4))

	// A settled set is left alone: no status write without a change.
	rv := settledSet.ResourceVersion
	h.patchPod("st-0", `{"metadata":{"annotations":{"touch":"1"}}}`)
	assert.Never(t, func() bool { return h.get("st").ResourceVersion != rv }, 2*time.Second, 100*time.Millisecond, "status rewritten without a change")
}

// TestV1alpha1Served: a StatefulSet written as apps.kruise.io/v1alpha1 (as
// the seeds' PersistentPodState example does) is read as v1beta1 and
// reconciled; a v1beta1 object reads back as v1alpha1.
func TestV1alpha1Served(t *testing.T) {
	h := newHarness(t)
	h.startController()
	ctx := context.Background()
	beta := newSet("old", 2, parallel)
	alpha := &appsv1alpha1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: beta.Spec}
	alpha.Spec.ReserveOrdinals = nil
	_, err := h.Client.AppsV1alpha1().StatefulSets(h.NS).Create(ctx, alpha, metav1.CreateOptions{})
	require.NoError(t, err)
	h.waitPods("old", "reconciled from v1alpha1", readyNames("old-0", "old-1"))
	got := h.waitStatus("old", "settled", settled(2))
	assert.Equal(t, appsv1.ParallelPodManagement, got.Spec.PodManagementPolicy)

	h.create(newSet("new", 1))
	back, err := h.Client.AppsV1alpha1().StatefulSets(h.NS).Get(ctx, "new", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), *back.Spec.Replicas)
}

// TestInvalidSpecReported: what admission lets through but the controller
// cannot use (a reversed reserveOrdinals range) is reported with a Warning
// event and a FailedCreatePod condition, not retried in a loop; fixing the
// spec brings the pods.
func TestInvalidSpecReported(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("bad", 2, func(s *appsv1beta1.StatefulSet) {
		s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString("5-3")}
	}))
	set := h.waitStatus("bad", "FailedCreatePod InvalidSpec", func(s appsv1beta1.StatefulSetStatus) bool {
		for _, c := range s.Conditions {
			if c.Type == appsv1beta1.FailedCreatePod && c.Status == corev1.ConditionTrue && c.Reason == "InvalidSpec" {
				return strings.Contains(c.Message, "spec.reserveOrdinals[0]")
			}
		}
		return false
	})
	assert.Empty(t, h.pods("bad"))
	found := false
	for _, e := range h.events("bad") {
		found = found || (e.Type == corev1.EventTypeWarning && e.Reason == "InvalidSpec")
	}
	assert.True(t, found, "Warning event InvalidSpec")
	rv := set.ResourceVersion
	testenv.Consistently(t, 2*time.Second, func() error {
		if got := h.get("bad").ResourceVersion; got != rv {
			return fmt.Errorf("status rewritten in a loop (%s -> %s)", rv, got)
		}
		return nil
	})

	h.modify("bad", func(s *appsv1beta1.StatefulSet) {
		s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString("3-5")}
	})
	h.waitPods("bad", "pods once fixed", readyNames("bad-0", "bad-1"))
	h.waitStatus("bad", "condition cleared", func(s appsv1beta1.StatefulSetStatus) bool {
		for _, c := range s.Conditions {
			if c.Type == appsv1beta1.FailedCreatePod {
				return c.Status == corev1.ConditionFalse
			}
		}
		return false
	})
}
