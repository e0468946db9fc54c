package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/resourcedistribution/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// TestDistributeUpdateAndRetarget: copies appear in every labelled namespace with OpenKruise's annotations and
// controllerRef; a source change reaches every copy; a later sync that changes nothing for a copy does not
// write it; a namespace that gains the label gets its copy, one that loses it loses the copy.
func TestDistributeUpdateAndRetarget(t *testing.T) {
	h := newHarness(t)
	nss := h.namespaces(3, true)
	h.startController()
	rd := h.rds.Create(h.bySelector(secretSource("creds", map[string]string{"user": "admin"})))

	copies := h.waitCopies(nss, "creds", "first copies", func(s *corev1.Secret) bool { return string(s.Data["user"]) == "admin" })
	for ns, s := range copies {
		assert.Equal(t, "demo", s.Labels["app"], ns)
		assert.Equal(t, "true", s.Labels[controller.CopyLabel], ns)
		assert.Equal(t, "team-a", s.Annotations["owner"], ns)
		assert.Equal(t, rd.Name, s.Annotations[appsv1alpha1.ResourceDistributionSourceAnnotation], ns)
		assert.Len(t, hashOf(s), 64, ns)
		ref := metav1.GetControllerOf(s)
		require.NotNil(t, ref, ns)
		assert.Equal(t, rd.UID, ref.UID)
		assert.Equal(t, "ResourceDistribution", ref.Kind)
	}
	st := h.waitStatus("3 of 3", counts(3, 3))
	assert.Equal(t, rd.Generation, st.ObservedGeneration)
	for _, c := range st.Conditions {
		assert.Equal(t, appsv1alpha1.ResourceDistributionConditionFalse, c.Status, c.Type)
		assert.Equal(t, "Succeeded", c.Reason, c.Type)
	}
	oldHash := hashOf(copies[nss[0]])

	// The source changes: every copy follows, each written once.
	h.rds.Modify(rd.Name, func(rd *appsv1alpha1.ResourceDistribution) {
		rd.Spec.Resource = raw(t, secretSource("creds", map[string]string{"user": "root"}))
	})
	updated := h.waitCopies(nss, "creds", "updated copies", func(s *corev1.Secret) bool {
		return string(s.Data["user"]) == "root" && hashOf(s) != oldHash
	})

	// A new namespace gains the label: it gets a copy, and the others are not written again.
	writesBefore := h.copyWrites.Load()
	added := h.namespaces(1, true)
	h.waitCopies(added, "creds", "copy in the added namespace", func(s *corev1.Secret) bool { return string(s.Data["user"]) == "root" })
	h.waitStatus("4 of 4", counts(4, 4))
	for ns, before := range updated {
		now, err := h.secret(ns, "creds")
		require.NoError(t, err)
		assert.Equal(t, before.ResourceVersion, now.ResourceVersion, "copy in %s was written although unchanged", ns)
	}
	assert.Equal(t, int64(1), h.copyWrites.Load()-writesBefore, "requests writing copies for one new namespace")

	// A namespace loses the label: its copy goes, the others stay.
	h.labelNamespace(nss[0], "")
	h.waitNoCopy(nss[0], "creds")
	h.waitStatus("3 of 3 after the label was removed", counts(3, 3))
	for _, ns := range nss[1:] {
		_, err := h.secret(ns, "creds")
		assert.NoError(t, err, ns)
	}
}

// TestRestoresEditedAndDeletedCopies: a copy edited by hand is put back, a deleted one re-created.
func TestRestoresEditedAndDeletedCopies(t *testing.T) {
	h := newHarness(t)
	nss := h.namespaces(2, true)
	h.startController()
	h.rds.Create(h.bySelector(secretSource("creds", map[string]string{"user": "admin"})))
	h.waitCopies(nss, "creds", "first copies", func(s *corev1.Secret) bool { return string(s.Data["user"]) == "admin" })

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := h.secret(nss[0], "creds")
		if err != nil {
			return err
		}
		s.Data["user"] = []byte("tampered")
		_, err = h.Env.Kube.CoreV1().Secrets(nss[0]).Update(context.Background(), s, metav1.UpdateOptions{})
		return err
	}))
	h.waitCopies(nss[:1], "creds", "edited copy restored", func(s *corev1.Secret) bool { return string(s.Data["user"]) == "admin" })

	require.NoError(t, h.Env.Kube.CoreV1().Secrets(nss[1]).Delete(context.Background(), "creds", metav1.DeleteOptions{}))
	h.waitCopies(nss[1:], "creds", "deleted copy re-created", func(s *corev1.Secret) bool { return string(s.Data["user"]) == "admin" })
}

// TestConflictAndMissingNamespace: a namespace already holding an object of the name that the distribution
// does not control is left alone and reported in ConflictOccurred; a listed namespace that does not exist is
// reported in NamespaceNotExists; both count as failed, the others succeed.
func TestConflictAndMissingNamespace(t *testing.T) {
	h := newHarness(t)
	nss := h.namespaces(2, false)
	foreign, err := h.Env.Kube.CoreV1().Secrets(nss[1]).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"user": "theirs"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	missing := "absent-" + h.id
	h.startController()
	rd := h.bySelector(secretSource("creds", map[string]string{"user": "admin"}))
	rd.Spec.Targets = appsv1alpha1.ResourceDistributionTargets{IncludedNamespaces: appsv1alpha1.ResourceDistributionTargetNamespaces{
		List: []appsv1alpha1.ResourceDistributionNamespace{{Name: nss[0]}, {Name: nss[1]}, {Name: missing}}}}
	h.rds.Create(rd)

	h.waitCopies(nss[:1], "creds", "copy in the free namespace", func(s *corev1.Secret) bool { return string(s.Data["user"]) == "admin" })
	st := h.waitStatus("1 of 3 with a conflict and a missing namespace", func(st appsv1alpha1.ResourceDistributionStatus) bool {
		return counts(3, 1)(st) && condition(st, appsv1alpha1.ResourceDistributionConflictOccurred).Status == "True" &&
			condition(st, appsv1alpha1.ResourceDistributionNamespaceNotExists).Status == "True"
	})
	conflict := condition(st, appsv1alpha1.ResourceDistributionConflictOccurred)
	assert.Equal(t, []string{nss[1]}, conflict.FailedNamespaces)
	assert.Equal(t, "conflict with existing resources because of the same namespace, group, version, kind and name", conflict.Reason)
	notExist := condition(st, appsv1alpha1.ResourceDistributionNamespaceNotExists)
	assert.Equal(t, []string{missing}, notExist.FailedNamespaces)
	assert.Equal(t, "namespace not found or is terminating", notExist.Reason)
	for _, c := range st.Conditions[:4] {
		assert.Equal(t, appsv1alpha1.ResourceDistributionConditionFalse, c.Status, c.Type)
	}

	left, err := h.secret(nss[1], "creds")
	require.NoError(t, err)
	assert.Equal(t, foreign.ResourceVersion, left.ResourceVersion, "the foreign Secret was written")
	assert.Equal(t, "theirs", string(left.Data["user"]))
	assert.Nil(t, metav1.GetControllerOf(left))

	// The missing namespace appears: it gets its copy and the condition clears.
	h.createNamedNamespace(missing)
	h.waitCopies([]string{missing}, "creds", "copy in the namespace created later", func(s *corev1.Secret) bool { return true })
	h.waitStatus("2 of 3, conflict only", func(st appsv1alpha1.ResourceDistributionStatus) bool {
		return counts(3, 2)(st) && condition(st, appsv1alpha1.ResourceDistributionNamespaceNotExists).Status == "False"
	})
}

// createNamedNamespace creates namespace name, deleted when the test ends.
func (h *harness) createNamedNamespace(name string) {
	h.T.Helper()
	_, err := h.Env.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(h.T, err)
	h.T.Cleanup(func() {
		_ = h.Env.Kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// TestDeleteDistributionRemovesCopies: the copies are the distribution's dependants; deleting it deletes them
// (the garbage collector follows the controllerRef; nothing else is touched).
func TestDeleteDistributionRemovesCopies(t *testing.T) {
	h := newHarness(t)
	nss := h.namespaces(2, true)
	other, err := h.Env.Kube.CoreV1().Secrets(nss[0]).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	h.startController()
	h.rds.Create(h.bySelector(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds"},
		"data": map[string]any{"k": "dg=="}}))
	h.waitCopies(nss, "creds", "copies", func(*corev1.Secret) bool { return true })

	require.NoError(t, h.Client.AppsV1alpha1().ResourceDistributions().Delete(context.Background(), h.id, metav1.DeleteOptions{}))
	for _, ns := range nss {
		h.waitNoCopy(ns, "creds")
	}
	_, err = h.secret(nss[0], other.Name)
	assert.NoError(t, err, "an unrelated Secret was deleted")
}

// TestConfigMap distributes a ConfigMap (data and binaryData).
func TestConfigMap(t *testing.T) {
	h := newHarness(t)
	nss := h.namespaces(2, true)
	h.startController()
	h.rds.Create(h.bySelector(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings"},
		"data": map[string]any{"mode": "fast"}, "binaryData": map[string]any{"blob": "AAE="}}))
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, ns := range nss {
			cm, err := h.Env.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if cm.Data["mode"] != "fast" || string(cm.BinaryData["blob"]) != "\x00\x01" {
				return false, nil
			}
		}
		return true, nil
	})
	h.waitStatus("2 of 2", counts(2, 2))
}

// TestRestartConverges: a controller stopped in the middle of distributing to many namespaces, and a new one
// started, end with exactly one up-to-date copy per namespace and no failure; a watch sees each copy created
// once and never written again (no delete and re-create, no second write of the same content).
func TestRestartConverges(t *testing.T) {
	h := newHarness(t)
	nss := h.namespaces(20, true)
	writes := h.watchCopyWrites(nss, "creds")
	// 10 requests a second: the first controller is stopped after a few of the 20 creates.
	stop := h.startControllerQPS(10)
	h.rds.Create(h.bySelector(secretSource("creds", map[string]string{"user": "admin"})))
	existing := func() int {
		n := 0
		for _, ns := range nss {
			if _, err := h.secret(ns, "creds"); err == nil {
				n++
			}
		}
		return n
	}
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return existing() >= 3, nil })
	stop()
	require.Less(t, existing(), 20, "the first controller was stopped mid-way")
	h.startController()
	copies := h.waitCopies(nss, "creds", "all copies after the restart", func(s *corev1.Secret) bool { return string(s.Data["user"]) == "admin" })
	st := h.waitStatus("20 of 20", counts(20, 20))
	for _, c := range st.Conditions {
		assert.Equal(t, appsv1alpha1.ResourceDistributionConditionFalse, c.Status, c.Type)
	}
	for ns, s := range copies {
		assert.Len(t, s.OwnerReferences, 1, ns)
	}
	// A create cut off by the stop may be sent again by the second controller: at most one batch of them.
	assert.Zero(t, h.copyUpdates.Load(), "update requests to copies")
	assert.GreaterOrEqual(t, h.copyWrites.Load(), int64(20), "create requests")
	assert.LessOrEqual(t, h.copyWrites.Load(), int64(20+16), "create requests")
	added, modified, deleted := writes()
	assert.Equal(t, 20, added, "copies created")
	assert.Zero(t, modified, "copies written after their creation")
	assert.Zero(t, deleted, "copies deleted")
}
