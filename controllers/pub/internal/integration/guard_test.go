package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func totalReplicas(n string) func(*policyv1alpha1.PodUnavailableBudget) {
	return func(p *policyv1alpha1.PodUnavailableBudget) {
		p.Annotations = map[string]string{pub.PubProtectTotalReplicasAnnotation: n}
	}
}

func (h *harness) evict(name string, dryRun bool) error {
	e := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS}}
	if dryRun {
		e.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return h.Env.Kube.CoreV1().Pods(h.NS).EvictV1(context.Background(), e)
}

func (h *harness) setImage(name, image string) error {
	pod, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pod.Spec.Containers[0].Image = image
	_, err = h.Env.Kube.CoreV1().Pods(h.NS).Update(context.Background(), pod, metav1.UpdateOptions{})
	return err
}

// Item 3: the guard on DELETE, eviction and an UPDATE that makes a ready
// pod unavailable (in-place image change); dry runs consume nothing; a
// refusal names the budget and its numbers; metadata-only updates and
// no-protect pods pass.
func TestGuard(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.createPods("web", 5, nil)
	h.waitReady("web", 5)
	h.pubs.Create(newPub("web", "web", "2", totalReplicas("5")))
	h.waitScoped()
	h.waitStatus("web", "2 allowed of 5", counts(2, 5, 3, 5))
	for _, p := range h.pods("web") {
		assert.Equal(t, "web", p.Annotations[pub.PodRelatedPubAnnotation], p.Name)
		assert.Equal(t, "web", p.Annotations[pub.PodRelatedPubAnnotationNew], p.Name)
	}

	dry := func(o *metav1.DeleteOptions) { o.DryRun = []string{metav1.DryRunAll} }
	require.NoError(t, h.deletePod("web-0", dry), "dry-run delete")
	require.NoError(t, h.evict("web-0", true), "dry-run eviction")
	testenv.Consistently(t, 2*time.Second, func() error {
		p := h.pubs.Get("web")
		if p.Status.UnavailableAllowed != 2 || len(p.Status.DisruptedPods) != 0 {
			return assert.AnError
		}
		return nil
	})

	require.NoError(t, h.setImage("web-0", imageV2), "in-place image change within the budget")
	p := h.pubs.Get("web")
	assert.Contains(t, p.Status.UnavailablePods, "web-0", "an update is recorded in unavailablePods")
	seen := h.watchPub("web", func(p *policyv1alpha1.PodUnavailableBudget) bool {
		_, ok := p.Status.DisruptedPods["web-1"]
		return ok && p.Status.UnavailableAllowed == 0
	})
	require.NoError(t, h.deletePod("web-1"), "a delete within the budget")
	assert.True(t, seen(), "a delete is recorded in disruptedPods (until the pod is seen gone)")

	h.waitStatus("web", "budget spent", counts(0, 3, 3, 5))
	err := h.deletePod("web-2")
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), "PodUnavailableBudget web refuses DELETE of pod web-2: unavailableAllowed is 0 (currentAvailable 3, desiredAvailable 3, totalReplicas 5)")
	assert.Contains(t, err.Error(), "pub unavailable allowed is negative", "OpenKruise's wording, for scripts that grep for it")
	t.Logf("delete: %v", err)

	err = h.evict("web-2", false)
	require.Error(t, err)
	assert.True(t, apierrors.IsTooManyRequests(err), "an eviction is refused as the Eviction API refuses it for a PDB: %v", err)
	assert.Contains(t, err.Error(), "PodUnavailableBudget web refuses EVICT of pod web-2")
	assert.Contains(t, err.Error(), "pub unavailable allowed is negative")

	err = h.setImage("web-3", imageV2)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), "refuses UPDATE of pod web-3")

	h.PatchPod("web-3", `{"metadata":{"labels":{"tier":"front"}}}`)
	h.PatchPod("web-4", `{"metadata":{"annotations":{"pub.kruise.io/no-protect":"true"}}}`)
	require.NoError(t, h.deletePod("web-4"), "a no-protect pod deletes freely")

	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, e := range h.Events("web-2") {
			if e.Reason == "PubPreventPodDeletion" && strings.Contains(e.Message, "PodUnavailableBudget web") {
				return true, nil
			}
		}
		return false, nil
	})
	assert.Len(t, h.pods("web"), 3)
	_ = corev1.PodReady
}

// watchPub watches the budget from now on; the returned function waits
// (up to waitTimeout) for a version satisfying cond.
func (h *harness) watchPub(name string, cond func(*policyv1alpha1.PodUnavailableBudget) bool) func() bool {
	h.T.Helper()
	cur := h.pubs.Get(name)
	w, err := h.Client.PolicyV1alpha1().PodUnavailableBudgets(h.NS).Watch(context.Background(), metav1.ListOptions{
		FieldSelector: "metadata.name=" + name, ResourceVersion: cur.ResourceVersion})
	require.NoError(h.T, err)
	h.T.Cleanup(w.Stop)
	return func() bool {
		timeout := time.After(waitTimeout)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return false
				}
				if p, ok := ev.Object.(*policyv1alpha1.PodUnavailableBudget); ok && cond(p) {
					return true
				}
			case <-timeout:
				return false
			}
		}
	}
}

// A resize through the pods/resize subresource — since Kubernetes 1.33 the
// only way to change a running pod's resources — is guarded like any other
// update: with the budget spent it is refused (without the gate
// InPlacePodVerticalScaling a resize counts as an update); the webhook
// configuration used to list pods and pods/status only, so it went through.
func TestGuardResize(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.createPods("rs", 2, nil, func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
		}
	})
	h.waitReady("rs", 2)
	h.pubs.Create(newPub("rs", "rs", "0", totalReplicas("2")))
	h.waitScoped()
	h.waitStatus("rs", "nothing allowed of 2", counts(0, 2, 2, 2))
	_, err := h.Env.Kube.CoreV1().Pods(h.NS).Patch(context.Background(), "rs-0", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"150m"}}}]}}`), metav1.PatchOptions{}, "resize")
	require.Error(t, err, "a resize with the budget spent")
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), "PodUnavailableBudget rs refuses")
	assert.Contains(t, err.Error(), "of pod rs-0")
	p, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), "rs-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "100m", p.Spec.Containers[0].Resources.Requests.Cpu().String(), "resources unchanged")
}
