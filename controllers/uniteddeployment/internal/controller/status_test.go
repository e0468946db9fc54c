package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func pod(rev string, ready, terminating bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appsv1alpha1.UnitedDeploymentRevisionLabelKey: rev}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if terminating {
		p.DeletionTimestamp = ptr.To(metav1.Now())
	}
	return p
}

func TestCountUpdated(t *testing.T) {
	finished := pod("r2", false, false)
	finished.Status.Phase = corev1.PodSucceeded
	got := CountUpdated([]*corev1.Pod{pod("r2", true, false), pod("r2", false, false), pod("r1", true, false),
		pod("r2", true, true), finished}, "r2")
	assert.Equal(t, PodCounts{Updated: 2, UpdatedReady: 1}, got, "terminating and finished pods do not count, nor other revisions")
}

func observed(replicas, ready int32) Observed {
	return Observed{Obj: &appsv1.Deployment{}, Replicas: replicas, ReadyReplicas: ready}
}

func TestCalculateStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))
	ud := func(st appsv1alpha1.UnitedDeploymentStatus) *appsv1alpha1.UnitedDeployment {
		u := udWith(ptr.To[int32](5), sub("a", ""), sub("b", ""))
		u.Generation = 3
		u.Status = st
		return u
	}
	base := StatusInput{
		Subsets:      map[string]Observed{"a": observed(3, 3), "b": observed(2, 1)},
		Pods:         map[string]PodCounts{"a": {Updated: 3, UpdatedReady: 3}, "b": {Updated: 2, UpdatedReady: 1}},
		NextReplicas: map[string]int32{"a": 3, "b": 2}, NextPartitions: map[string]int32{"a": 0, "b": 1},
		CurrentRevision: "r1", UpdateRevision: "r1", Selector: "app=web", Now: t1,
	}

	t.Run("first status", func(t *testing.T) {
		st := CalculateStatus(ud(appsv1alpha1.UnitedDeploymentStatus{}), base)
		assert.Equal(t, int64(3), st.ObservedGeneration)
		assert.Equal(t, int32(5), st.Replicas)
		assert.Equal(t, int32(4), st.ReadyReplicas)
		assert.Equal(t, int32(5), st.UpdatedReplicas)
		assert.Equal(t, int32(4), st.UpdatedReadyReplicas)
		assert.Equal(t, "r1", st.CurrentRevision)
		assert.Equal(t, &appsv1alpha1.UpdateStatus{UpdatedRevision: "r1", CurrentPartitions: map[string]int32{"a": 0, "b": 1}}, st.UpdateStatus)
		assert.Equal(t, map[string]int32{"a": 3, "b": 2}, st.SubsetReplicas)
		assert.Equal(t, []appsv1alpha1.UnitedDeploymentSubsetStatus{
			{Name: "a", Replicas: 3, ReadyReplicas: 3}, {Name: "b", Replicas: 2, ReadyReplicas: 1, Partition: 1}}, st.SubsetStatuses)
		assert.Equal(t, "app=web", st.LabelSelector)
		assert.Equal(t, []appsv1alpha1.UnitedDeploymentCondition{
			{Type: appsv1alpha1.UnitedDeploymentUpdated, Status: corev1.ConditionTrue, Reason: "UnitedDeploymentRevisionUpdated", Message: "updated to revision r1", LastTransitionTime: t1},
			{Type: appsv1alpha1.SubsetUpdated, Status: corev1.ConditionTrue, LastTransitionTime: t1},
		}, st.Conditions)
	})

	t.Run("rolling out: current revision stays until every pod of the new one is ready", func(t *testing.T) {
		in := base
		in.UpdateRevision = "r2"
		in.Pods = map[string]PodCounts{"a": {Updated: 3, UpdatedReady: 3}, "b": {Updated: 1, UpdatedReady: 1}}
		prev := appsv1alpha1.UnitedDeploymentStatus{CurrentRevision: "r1", Conditions: []appsv1alpha1.UnitedDeploymentCondition{
			{Type: appsv1alpha1.UnitedDeploymentUpdated, Status: corev1.ConditionTrue, Reason: "UnitedDeploymentRevisionUpdated", Message: "updated to revision r1", LastTransitionTime: t0}}}
		st := CalculateStatus(ud(prev), in)
		assert.Equal(t, "r1", st.CurrentRevision)
		assert.Equal(t, "r2", st.UpdateStatus.UpdatedRevision)
		c := st.Conditions[len(st.Conditions)-2]
		assert.Equal(t, appsv1alpha1.UnitedDeploymentCondition{Type: appsv1alpha1.UnitedDeploymentUpdated, Status: corev1.ConditionFalse,
			Reason: "UnitedDeploymentRevisionUpdating", Message: "updating to revision r2", LastTransitionTime: t1}, c)

		in.Pods = map[string]PodCounts{"a": {Updated: 3, UpdatedReady: 3}, "b": {Updated: 2, UpdatedReady: 2}}
		st = CalculateStatus(ud(prev), in)
		assert.Equal(t, "r2", st.CurrentRevision, "every pod updated and ready: the rollout is done")
	})

	t.Run("conditions keep their time when unchanged, and report errors", func(t *testing.T) {
		prev := CalculateStatus(ud(appsv1alpha1.UnitedDeploymentStatus{}), StatusInput{CurrentRevision: "r1", UpdateRevision: "r1", Now: t0, Provisioned: true})
		in := base
		in.ProvisionErr = errors.New("fail to create Subset (Deployment) b: boom")
		st := CalculateStatus(ud(prev), in)
		byType := map[appsv1alpha1.UnitedDeploymentConditionType]appsv1alpha1.UnitedDeploymentCondition{}
		for _, c := range st.Conditions {
			byType[c.Type] = c
		}
		assert.Equal(t, t0, byType[appsv1alpha1.UnitedDeploymentUpdated].LastTransitionTime, "unchanged: time kept")
		assert.Equal(t, appsv1alpha1.UnitedDeploymentCondition{Type: appsv1alpha1.SubsetProvisioned, Status: corev1.ConditionFalse, Reason: "Error",
			Message: "fail to create Subset (Deployment) b: boom", LastTransitionTime: t1}, byType[appsv1alpha1.SubsetProvisioned])
		assert.Equal(t, t0, byType[appsv1alpha1.SubsetUpdated].LastTransitionTime, "not retried while provisioning fails")

		in.ProvisionErr = nil
		in.UpdateErr = errors.New("update Deployment web-a: conflict")
		st = CalculateStatus(ud(st), in)
		for _, c := range st.Conditions {
			if c.Type == appsv1alpha1.SubsetUpdated {
				assert.Equal(t, corev1.ConditionFalse, c.Status)
				assert.Equal(t, "update Deployment web-a: conflict", c.Message)
			}
			if c.Type == appsv1alpha1.SubsetProvisioned {
				assert.Equal(t, corev1.ConditionFalse, c.Status, "left as it was until something is provisioned again")
			}
		}
	})

	t.Run("a subset without workload yet counts nothing", func(t *testing.T) {
		in := base
		in.Subsets = map[string]Observed{"a": observed(3, 3)}
		in.Pods = map[string]PodCounts{"a": {Updated: 3, UpdatedReady: 3}}
		st := CalculateStatus(ud(appsv1alpha1.UnitedDeploymentStatus{}), in)
		assert.Equal(t, int32(3), st.Replicas)
		assert.Equal(t, appsv1alpha1.UnitedDeploymentSubsetStatus{Name: "b", Partition: 1}, st.SubsetStatuses[1])
	})
}
