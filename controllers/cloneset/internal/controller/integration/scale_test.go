package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Item 1: create, scale up and down; pod names, labels, owner refs,
// readiness gates; status and revision.
func TestScaleUpAndDown(t *testing.T) {
	h := newHarness(t)
	h.startController()
	cs := h.create(newCloneSet("web", 3))
	pods := h.waitPods("web", "3 ready pods", allReady(3))
	st := h.waitStatus("web", "3 settled", settled(3))

	revs := h.revisions(cs)
	require.Len(t, revs, 1)
	assert.Equal(t, revs[0].Name, st.Status.UpdateRevision)
	assert.True(t, strings.HasPrefix(revs[0].Name, "web-"))
	assert.Equal(t, "app=web", st.Status.LabelSelector)
	assert.Equal(t, int32(3), st.Status.ExpectedUpdatedReplicas)
	for _, p := range pods {
		id := p.Labels[pub.CloneSetInstanceID]
		assert.Len(t, id, 5)
		assert.Equal(t, "web-"+id, p.Name)
		assert.Equal(t, revs[0].Name, p.Labels[pub.ControllerRevisionHashLabelKey], "full revision name without CloneSetShortHash")
		assert.Equal(t, strings.TrimPrefix(revs[0].Name, "web-"), p.Labels[pub.PodTemplateHashLabelKey])
		assert.Equal(t, string(pub.LifecycleStateNormal), p.Labels[pub.LifecycleStateKey])
		ref := metav1.GetControllerOf(&p)
		require.NotNil(t, ref)
		assert.Equal(t, cs.UID, ref.UID)
		assert.Equal(t, "CloneSet", ref.Kind)
		assert.Contains(t, p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.InPlaceUpdateReady})
	}

	h.modify("web", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptrTo(int32(5)) })
	h.waitPods("web", "5 ready pods", allReady(5))
	h.waitStatus("web", "5 settled", settled(5))

	h.modify("web", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptrTo(int32(2)) })
	h.waitPods("web", "2 ready pods", allReady(2))
	h.waitStatus("web", "2 settled", settled(2))
	_ = context.Background()
}

func ptrTo[T any](v T) *T { return &v }
