package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// StatefulSet subsets with Manual partitions: after a template change each subset's StatefulSet keeps its
// partition's pods at the old revision (kube-controller-manager updates the others), the status counts the updated
// pods and keeps the current revision until the partitions are lifted and every pod is updated and ready.
func TestStatefulSetPartitions(t *testing.T) {
	h := newHarness(t)
	h.zoneNodes("a", 1)
	h.zoneNodes("b", 1)
	h.startController()

	ud := &appsv1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: appsv1alpha1.SubsetTemplate{StatefulSetTemplate: &appsv1alpha1.StatefulSetTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec: appsv1.StatefulSetSpec{Template: podTemplate("db", "registry.local/db:v1"),
					PodManagementPolicy: appsv1.ParallelPodManagement},
			}},
			Topology: appsv1alpha1.Topology{Subsets: []appsv1alpha1.Subset{h.zoneSubset("a", "a", nil), h.zoneSubset("b", "b", nil)}},
		},
	}
	ud = h.uds.Create(ud)
	ud = h.uds.WaitFor(ud.Name, "4 pods ready", settled(4))
	rev1 := ud.Status.CurrentRevision

	ud = h.uds.Modify(ud.Name, func(u *appsv1alpha1.UnitedDeployment) {
		u.Spec.Template.StatefulSetTemplate.Spec.Template.Spec.Containers[0].Image = "registry.local/db:v2"
		u.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 1}}
	})
	ud = h.uds.WaitFor(ud.Name, "3 pods updated, a's first pod kept by its partition", func(u *appsv1alpha1.UnitedDeployment) bool {
		st := u.Status
		return st.ObservedGeneration == u.Generation && st.UpdatedReadyReplicas == 3 && st.ReadyReplicas == 4
	})
	assert.Equal(t, rev1, ud.Status.CurrentRevision, "not every pod is updated yet")
	rev2 := ud.Status.UpdateStatus.UpdatedRevision
	assert.NotEqual(t, rev1, rev2)
	assert.Equal(t, map[string]int32{"a": 1, "b": 0}, ud.Status.UpdateStatus.CurrentPartitions)
	assert.Equal(t, corev1.ConditionFalse, condition(ud, appsv1alpha1.UnitedDeploymentUpdated).Status)
	assert.Equal(t, "updating to revision "+rev2, condition(ud, appsv1alpha1.UnitedDeploymentUpdated).Message)
	list, err := h.Env.Kube.AppsV1().StatefulSets(h.NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 2)
	for _, s := range list.Items {
		want := int32(0)
		if s.Labels[appsv1alpha1.SubSetNameLabelKey] == "a" {
			want = 1
		}
		assert.Equal(t, want, *s.Spec.UpdateStrategy.RollingUpdate.Partition, s.Name)
	}
	for _, p := range h.Pods("app=db") {
		old := p.Labels[appsv1alpha1.SubSetNameLabelKey] == "a" && p.Labels["apps.kubernetes.io/pod-index"] == "0"
		if old {
			assert.Equal(t, rev1, p.Labels[appsv1alpha1.UnitedDeploymentRevisionLabelKey], p.Name)
		} else {
			assert.Equal(t, rev2, p.Labels[appsv1alpha1.UnitedDeploymentRevisionLabelKey], p.Name)
		}
	}

	h.uds.Modify(ud.Name, func(u *appsv1alpha1.UnitedDeployment) { u.Spec.UpdateStrategy.ManualUpdate.Partitions = nil })
	ud = h.uds.WaitFor(ud.Name, "every pod updated, the rollout done", func(u *appsv1alpha1.UnitedDeployment) bool {
		return settled(4)(u) && u.Status.CurrentRevision == rev2
	})
	assert.Equal(t, corev1.ConditionTrue, condition(ud, appsv1alpha1.UnitedDeploymentUpdated).Status)
}

// CloneSet and Advanced StatefulSet subsets are written for their own controllers (not running here): named,
// labelled, split and partitioned as the other kinds; changing the template's kind replaces the subsets.
func TestCloneSetAndAdvancedStatefulSetSubsets(t *testing.T) {
	h := newHarness(t)
	h.startController()
	ud := deploymentUD("mixed", 5, h.zoneSubset("a", "a", ptr.To(intstr.FromInt32(1))), h.zoneSubset("b", "b", nil))
	ud.Spec.Template = appsv1alpha1.SubsetTemplate{CloneSetTemplate: &appsv1alpha1.CloneSetTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mixed"}},
		Spec:       appsv1alpha1.CloneSetSpec{Template: podTemplate("mixed", "registry.local/mixed:v1")},
	}}
	ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"b": 2}}
	ud = h.uds.Create(ud)

	clonesets := func() map[string]appsv1alpha1.CloneSet {
		list, err := h.Client.AppsV1alpha1().CloneSets(h.NS).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		out := map[string]appsv1alpha1.CloneSet{}
		for _, c := range testenv.Live(list.Items) {
			out[c.Labels[appsv1alpha1.SubSetNameLabelKey]] = c
		}
		return out
	}
	var cs map[string]appsv1alpha1.CloneSet
	testenv.Eventually(t, waitTimeout, func() (bool, error) { cs = clonesets(); return len(cs) == 2, nil })
	assert.Equal(t, int32(1), *cs["a"].Spec.Replicas)
	assert.Equal(t, int32(4), *cs["b"].Spec.Replicas)
	assert.Equal(t, intstr.FromInt32(2), *cs["b"].Spec.UpdateStrategy.Partition)
	assert.Equal(t, intstr.FromInt32(0), *cs["a"].Spec.UpdateStrategy.Partition)
	assert.Equal(t, "mixed-b-", cs["b"].GenerateName)
	assert.Equal(t, "UnitedDeployment", metav1.GetControllerOf(ptr.To(cs["b"])).Kind)

	// Advanced StatefulSet: the CloneSets go, one Advanced StatefulSet per subset comes.
	h.uds.Modify(ud.Name, func(u *appsv1alpha1.UnitedDeployment) {
		u.Spec.Template = appsv1alpha1.SubsetTemplate{AdvancedStatefulSetTemplate: &appsv1alpha1.AdvancedStatefulSetTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mixed"}},
			Spec:       appsv1beta1.StatefulSetSpec{Template: podTemplate("mixed", "registry.local/mixed:v1")},
		}}
	})
	var asts []appsv1beta1.StatefulSet
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		list, err := h.Client.AppsV1beta1().StatefulSets(h.NS).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		asts = testenv.Live(list.Items)
		return len(asts) == 2 && len(clonesets()) == 0, nil
	})
	for _, s := range asts {
		want := int32(0)
		if s.Labels[appsv1alpha1.SubSetNameLabelKey] == "b" {
			want = 2
		}
		assert.Equal(t, want, *s.Spec.UpdateStrategy.RollingUpdate.Partition, s.Name)
	}
	ud = h.uds.WaitFor(ud.Name, "subsets provisioned", func(u *appsv1alpha1.UnitedDeployment) bool {
		c := condition(u, appsv1alpha1.SubsetProvisioned)
		return u.Status.ObservedGeneration == u.Generation && c != nil && c.Status == corev1.ConditionTrue
	})
	assert.Len(t, h.Revisions(ud.UID), 2)
}
