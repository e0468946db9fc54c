package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/webhook"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Item 1 and §2 through the API server: a matching pod gets its sidecar
// and OpenKruise's annotations; pods no SidecarSet selects are never sent
// to the webhook (its request counter does not move).
func TestInjectionThroughAPIServer(t *testing.T) {
	h := newHarness(t, admissionregistrationv1.Fail)
	h.start()
	assert.Equal(t, kitwebhook.Never, h.scope(), "no SidecarSet: no call at all")
	p, err := h.createPod("before", map[string]string{"app": "web"})
	require.NoError(t, err)
	assert.Equal(t, []string{"app"}, containerNames(p))
	assert.Zero(t, h.calls(), "no SidecarSet: the API server did not call the webhook")

	_, err = h.createSet(h.newSet("inject", map[string]string{"app": "web"}))
	require.NoError(t, err)
	h.waitScope("one SidecarSet", func(s string) bool { return s != kitwebhook.Never })

	p, err = h.createPod("web", map[string]string{"app": "web"})
	require.NoError(t, err)
	assert.Equal(t, []string{"side", "app"}, containerNames(p), "BeforeAppContainer")
	assert.Equal(t, h.NS+"-inject", p.Annotations[sidecarcontrol.InjectedListAnnotation])
	assert.Contains(t, p.Annotations[sidecarcontrol.HashAnnotation], `"sidecarSetName":"`+h.NS+`-inject"`)
	assert.Equal(t, 1.0, h.calls())

	for i := range 20 {
		p, err := h.createPod(fmt.Sprintf("other-%d", i), map[string]string{"app": "db"})
		require.NoError(t, err)
		assert.Equal(t, []string{"app"}, containerNames(p))
	}
	assert.Equal(t, 1.0, h.calls(), "pods no SidecarSet selects make no webhook call")
}

// §2, failurePolicy Fail: with the webhook process stopped, pods no
// SidecarSet selects still create; a pod one selects is rejected, and the
// message names the webhook.
func TestWebhookDownFail(t *testing.T) {
	h := newHarness(t, admissionregistrationv1.Fail)
	h.start()
	_, err := h.createSet(h.newSet("down", map[string]string{"app": "web"}))
	require.NoError(t, err)
	h.waitScope("one SidecarSet", func(s string) bool { return s != kitwebhook.Never })
	h.stop()

	p, err := h.createPod("unrelated", map[string]string{"app": "db"})
	require.NoError(t, err, "a pod no SidecarSet selects does not wait on the webhook")
	assert.Equal(t, []string{"app"}, containerNames(p))
	_, err = h.createPod("nolabels", nil)
	require.NoError(t, err)

	_, err = h.createPod("web", map[string]string{"app": "web"})
	require.Error(t, err, "Fail: a pod the SidecarSet selects is rejected while the webhook is down")
	assert.Contains(t, err.Error(), webhook.PodWebhookName)
	t.Logf("rejection: %v", err)
}

// §2, failurePolicy Ignore: with the webhook stopped a selected pod is
// created, without its sidecar.
func TestWebhookDownIgnore(t *testing.T) {
	h := newHarness(t, admissionregistrationv1.Ignore)
	h.start()
	_, err := h.createSet(h.newSet("down", map[string]string{"app": "web"}))
	require.NoError(t, err)
	h.waitScope("one SidecarSet", func(s string) bool { return s != kitwebhook.Never })
	h.stop()

	p, err := h.createPod("web", map[string]string{"app": "web"})
	require.NoError(t, err)
	assert.Equal(t, []string{"app"}, containerNames(p), "created without sidecars")
	assert.Empty(t, p.Annotations[sidecarcontrol.InjectedListAnnotation])
}

// The scope follows the SidecarSets: paused injection and deletion take a
// SidecarSet out; with none left the condition is "false" again.
func TestScopeFollowsSidecarSets(t *testing.T) {
	h := newHarness(t, admissionregistrationv1.Fail)
	h.start()
	s, err := h.createSet(h.newSet("scope", map[string]string{"app": "web"}))
	require.NoError(t, err)
	h.waitScope("selector", func(e string) bool { return strings.Contains(e, `"web"`) && strings.Contains(e, strconv.Quote(h.NS)) })

	h.sets.Modify(s.Name, func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })
	h.waitScope("paused", func(e string) bool { return e == kitwebhook.Never })

	_, err = h.createSet(h.newSet("scope2", map[string]string{"app": "api"}))
	require.NoError(t, err)
	h.waitScope("second", func(e string) bool { return strings.Contains(e, `"api"`) })
	require.NoError(t, h.Client.AppsV1alpha1().SidecarSets().Delete(context.Background(), h.NS+"-scope2", metav1.DeleteOptions{}))
	h.waitScope("deleted", func(e string) bool { return e == kitwebhook.Never })
}

// Issue 26 item 9: a replica that does not lead widens the scope for a new
// SidecarSet (the leader may be away: between two leaders, or none at
// all), so a pod created right after gets its sidecar; it never narrows.
func TestStandbyReplicaWidensScope(t *testing.T) {
	h := newHarness(t, admissionregistrationv1.Fail)
	h.standby = true
	h.start()
	_, err := h.createSet(h.newSet("standby", map[string]string{"app": "web"}))
	require.NoError(t, err)
	start := time.Now()
	h.waitScope("widened by a standby", func(e string) bool { return strings.Contains(e, `"web"`) && strings.Contains(e, strconv.Quote(h.NS)) })
	t.Logf("in scope %v after the create, without a leader", time.Since(start).Round(time.Millisecond))
	p, err := h.createPod("web", map[string]string{"app": "web"})
	require.NoError(t, err)
	assert.Equal(t, []string{"side", "app"}, containerNames(p))

	// Only the leader narrows: a standby leaves the deleted set's term.
	require.NoError(t, h.Client.AppsV1alpha1().SidecarSets().Delete(context.Background(), h.NS+"-standby", metav1.DeleteOptions{}))
	_, err = h.createSet(h.newSet("second", map[string]string{"app": "api"}))
	require.NoError(t, err)
	h.waitScope("second set, after the first was deleted", func(e string) bool { return strings.Contains(e, `"api"`) })
	assert.Contains(t, h.scope(), `"web"`, "a standby never narrows")
}

// Issue 26 item 9, upgrade: "kubectl apply --server-side --force-conflicts"
// of the shipped configuration (as an upgrade does) resets the scope
// condition to "false"; the replicas see the configuration change and
// restore it at once instead of at the next 30 s resync, so pods created
// right after an upgrade still get their sidecars.
func TestScopeRestoredAfterServerSideApply(t *testing.T) {
	h := newHarness(t, admissionregistrationv1.Fail)
	h.start()
	_, err := h.createSet(h.newSet("upgrade", map[string]string{"app": "web"}))
	require.NoError(t, err)
	h.waitScope("before the upgrade", func(e string) bool { return strings.Contains(e, `"web"`) })

	shipped := h.shippedMutating()
	data, err := json.Marshal(shipped)
	require.NoError(t, err)
	applied, err := h.Env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(context.Background(), h.config,
		types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "kubectl", Force: ptr.To(true)})
	require.NoError(t, err)
	start := time.Now()
	var reset bool
	for _, c := range applied.Webhooks[0].MatchConditions {
		reset = reset || (c.Name == webhook.ScopeCondition && c.Expression == kitwebhook.Never)
	}
	require.True(t, reset, "the apply reset the scope: %+v", applied.Webhooks[0].MatchConditions)

	testenv.Eventually(t, 5*time.Second, func() (bool, error) { return strings.Contains(h.scope(), `"web"`), nil })
	t.Logf("scope restored %v after the server-side apply", time.Since(start).Round(time.Millisecond))
	p, err := h.createPod("web", map[string]string{"app": "web"})
	require.NoError(t, err)
	assert.Equal(t, []string{"side", "app"}, containerNames(p))
}

// Issue 26 item 9: a SidecarSet says when it is served — condition
// WebhookInScope True at the generation the scope was computed from once
// the leader has it in the configuration, False while injection is paused.
func TestInScopeCondition(t *testing.T) {
	h := newHarness(t, admissionregistrationv1.Fail)
	h.start()
	s, err := h.createSet(h.newSet("cond", map[string]string{"app": "web"}))
	require.NoError(t, err)
	waitCondition := func(what string, status metav1.ConditionStatus) *appsv1alpha1.SidecarSet {
		t.Helper()
		var got *appsv1alpha1.SidecarSet
		testenv.Eventually(t, waitTimeout, func() (bool, error) {
			var err error
			got, err = h.Client.AppsV1alpha1().SidecarSets().Get(context.Background(), s.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := apimeta.FindStatusCondition(got.Status.Conditions, kitwebhook.InScopeCondition)
			return c != nil && c.Status == status && c.ObservedGeneration == got.Generation, nil
		})
		t.Logf("%s: %+v", what, apimeta.FindStatusCondition(got.Status.Conditions, kitwebhook.InScopeCondition))
		return got
	}
	got := waitCondition("created", metav1.ConditionTrue)
	assert.Contains(t, h.scope(), `"web"`, "True only once the scope has it")

	require.Equal(t, got.Generation, apimeta.FindStatusCondition(got.Status.Conditions, kitwebhook.InScopeCondition).ObservedGeneration)
	h.sets.Modify(s.Name, func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })
	waitCondition("paused", metav1.ConditionFalse)
	h.sets.Modify(s.Name, func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = false })
	waitCondition("resumed", metav1.ConditionTrue)
}

// Item 7 through the API server: cross-object rules are rejected by the
// validating webhook with the field named.
func TestValidationThroughAPIServer(t *testing.T) {
	h := newHarness(t, admissionregistrationv1.Fail)
	h.start()
	_, err := h.createSet(h.newSet("first", map[string]string{"app": "web"}))
	require.NoError(t, err)
	// The webhook checks against its SidecarSet cache, which also feeds the
	// scope: once the scope shows the first set, the webhook knows it.
	h.waitScope("first", func(e string) bool { return strings.Contains(e, `"web"`) })

	_, err = h.createSet(h.newSet("clash", map[string]string{"app": "web", "tier": "front"}))
	require.Error(t, err, "same container name on overlapping pods")
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.containers[0].name")
	assert.Contains(t, err.Error(), h.NS+"-first")

	_, err = h.createSet(h.newSet("disjoint", map[string]string{"app": "db"}))
	require.NoError(t, err, "same name, disjoint selectors: allowed")

	_, err = h.createSet(h.newSet("pinned", map[string]string{"app": "api"}, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Name = "other"
		s.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To("nope")}
	}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.injectionStrategy.revision.revisionName")

	s, err := h.Client.AppsV1alpha1().SidecarSets().Get(context.Background(), h.NS+"-first", metav1.GetOptions{})
	require.NoError(t, err)
	s.Spec.Containers[0].UpgradeStrategy.UpgradeType = appsv1alpha1.SidecarContainerHotUpgrade
	s.Spec.Containers[0].UpgradeStrategy.HotUpgradeEmptyImage = "empty:1"
	_, err = h.Client.AppsV1alpha1().SidecarSets().Update(context.Background(), s, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.containers[0].upgradeStrategy.upgradeType")
}
