package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/resourcedistribution/internal/controller"
)

// TestTakesOverOpenKruiseCopies: copies written by OpenKruise (its annotations and controllerRef, no Flotilla
// label, hence not in the controller's cache) are recognised when the create finds the name taken, brought up to
// date and labelled — not reported as conflicts. (A controllerRef to an earlier distribution of the same name is
// replaced too: TestCopyDiff; here the garbage collector would race it, deleting a copy whose owner is gone.)
func TestTakesOverOpenKruiseCopies(t *testing.T) {
	h := newHarness(t)
	nss := h.namespaces(2, true)
	rd := h.rds.Create(h.bySelector(secretSource("creds", map[string]string{"user": "admin"})))
	okCopy := func(ns string) {
		_, err := h.Env.Kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "creds",
				Annotations: map[string]string{appsv1alpha1.ResourceDistributionHashAnnotation: "old",
					appsv1alpha1.ResourceDistributionSourceAnnotation: rd.Name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ResourceDistribution",
					Name: rd.Name, UID: rd.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			StringData: map[string]string{"user": "stale"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	okCopy(nss[0])
	h.startController()

	copies := h.waitCopies(nss, "creds", "copies up to date", func(s *corev1.Secret) bool {
		return string(s.Data["user"]) == "admin" && s.Labels[controller.CopyLabel] == "true"
	})
	for ns, s := range copies {
		require.Len(t, s.OwnerReferences, 1, ns)
		assert.Equal(t, rd.UID, s.OwnerReferences[0].UID, ns)
	}
	st := h.waitStatus("2 of 2", counts(2, 2))
	assert.Equal(t, appsv1alpha1.ResourceDistributionConditionFalse, condition(st, appsv1alpha1.ResourceDistributionConflictOccurred).Status)
}
