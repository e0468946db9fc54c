// Package integration drives the SidecarSet webhooks through the real
// kube-apiserver of the local control plane: the webhook server runs
// in-process on 127.0.0.1 with certificates generated into a Secret, and
// each test installs its own Mutating/ValidatingWebhookConfiguration
// pointing at it by URL. To keep other tests' pods and SidecarSets out of
// reach, a test's pod webhook only sees its own namespace (namespaceSelector)
// and its SidecarSet webhook only SidecarSets labelled for it
// (objectSelector); its handlers and scope only read SidecarSets so labelled.
package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/webhook"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	waitTimeout = 60 * time.Second
	testLabel   = "flotilla.dev/sidecarset-webhook-test"
)

type harness struct {
	t       *testing.T
	env     *testenv.Env
	ns      string
	client  versioned.Interface
	config  string // name of both webhook configurations
	policy  admissionregistrationv1.FailurePolicyType
	port    int
	reg     *prometheus.Registry
	stopped bool
	stop    func()
	// standby runs this process as a replica that does not lead: no
	// leader's scope syncer, only what every replica runs.
	standby bool
}

func newHarness(t *testing.T, policy admissionregistrationv1.FailurePolicyType) *harness {
	t.Helper()
	t.Parallel()
	env := testenv.Get(t)
	h := &harness{t: t, env: env, ns: env.Namespace(t), client: versioned.NewForConfigOrDie(env.Config), policy: policy}
	h.config = "flotilla-test-" + h.ns
	h.port = freePort(t)
	h.installConfigurations()
	return h
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// installConfigurations creates the test's webhook configurations as the
// manifests do: no caBundle (the webhook writes it), the pod scope
// condition "false" until the scope syncer computed it.
func (h *harness) installConfigurations() {
	ctx := context.Background()
	url := func(path string) *string { return ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", h.port, path)) }
	none := admissionregistrationv1.SideEffectClassNone
	m := h.shippedMutating()
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: h.config},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "validate.sidecarsets.flotilla.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: url(webhook.SidecarSetPath)},
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule("apps.kruise.io", "v1alpha1", "sidecarsets", admissionregistrationv1.Create, admissionregistrationv1.Update)},
			FailurePolicy:           &h.policy,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(5)),
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{testLabel: h.ns}},
		}},
	}
	_, err := h.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{})
	require.NoError(h.t, err)
	_, err = h.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{})
	require.NoError(h.t, err)
	h.t.Cleanup(func() {
		_ = h.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), h.config, metav1.DeleteOptions{})
		_ = h.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), h.config, metav1.DeleteOptions{})
	})
}

// shippedMutating is the test's pod webhook configuration as the manifests
// ship it: no caBundle, the scope condition "false".
func (h *harness) shippedMutating() *admissionregistrationv1.MutatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: h.config},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    webhook.PodWebhookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", h.port, webhook.PodPath))},
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule("", "v1", "pods", admissionregistrationv1.Create)},
			FailurePolicy:           &h.policy,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(5)),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: h.ns}},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: webhook.ScopeCondition, Expression: kitwebhook.Never}},
		}},
	}
}

func rule(group, version, resource string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{
		APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}, Scope: ptr.To(admissionregistrationv1.AllScopes)}}
}

// start runs what a replica of the binary runs for the webhook (server,
// certificates in a Secret of the test namespace, caBundle injection, the
// scope's widening half and the watch of the configuration) and, unless
// standby, what its leader runs (the scope syncer), over informers that see
// only this test's SidecarSets. It returns once the webhook serves and the
// caBundle is in both configurations.
func (h *harness) start() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().WithValues("test", h.t.Name())))
	mine := func(o *metav1.ListOptions) { o.LabelSelector = labels.Set{testLabel: h.ns}.String() }
	sets := flotillainformers.NewSharedInformerFactoryWithOptions(h.client, 0, flotillainformers.WithTweakListOptions(mine))
	setInf := sets.Apps().V1alpha1().SidecarSets()
	kube := informers.NewSharedInformerFactory(h.env.Kube, 0)
	nsInf := kube.Core().V1().Namespaces()
	sys := informers.NewSharedInformerFactoryWithOptions(h.env.Kube, 0, informers.WithNamespace(h.ns))
	revInf := sys.Apps().V1().ControllerRevisions()
	require.NoError(h.t, revInf.Informer().AddIndexers(cache.Indexers{sidecarcontrol.RevisionIndex: sidecarcontrol.IndexRevisionBySidecarSet}))
	cmInf := sys.Core().V1().ConfigMaps()

	h.reg = prometheus.NewRegistry()
	opts := kitwebhook.Options{Host: "127.0.0.1", Port: h.port, SecretName: "webhook-certs", Namespace: h.ns, ServiceName: "sidecarset-webhook"}
	refs := []kitwebhook.ConfigRef{{Kind: kitwebhook.Mutating, Name: h.config}, {Kind: kitwebhook.Validating, Name: h.config}}
	c, err := kitwebhook.New(opts, h.env.Kube, h.reg, nil, refs...)
	require.NoError(h.t, err)
	(&webhook.Handlers{
		Sets: setInf.Lister(), Namespaces: nsInf.Lister(), Kube: h.env.Kube,
		Revisions:  sidecarcontrol.RevisionIndexer{Indexer: revInf.Informer().GetIndexer()},
		ConfigMaps: cmInf.Lister(), SystemNamespace: h.ns,
	}).Register(c.Server)
	scope := webhook.NewPodScopeSyncer(h.env.Kube, h.client, refs[0], setInf.Lister(), setInf.Informer().HasSynced, true, nil)
	_, err = setInf.Informer().AddEventHandler(webhook.TriggerOnChange(scope.Trigger))
	require.NoError(h.t, err)
	watch, err := kitwebhook.WatchConfig(h.env.Kube, refs[0], scope.Trigger)
	require.NoError(h.t, err)
	for _, f := range []interface{ Start(<-chan struct{}) }{sets, kube, sys, watch} {
		f.Start(ctx.Done())
	}
	cache.WaitForCacheSync(ctx.Done(), setInf.Informer().HasSynced, nsInf.Informer().HasSynced, revInf.Informer().HasSynced, cmInf.Informer().HasSynced)
	watch.WaitForCacheSync(ctx.Done())

	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Run(ctx); err != nil {
			h.t.Errorf("webhook: %v", err)
		}
	})
	wg.Go(func() { _ = scope.ReplicaComponent().Run(ctx) })
	if !h.standby {
		wg.Go(func() { _ = scope.Run(ctx, 1) })
	}
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			sets.Shutdown()
			kube.Shutdown()
			sys.Shutdown()
			watch.Shutdown()
			h.stopped = true
		})
	}
	h.t.Cleanup(h.stop)
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) { return c.Ready() == nil, nil })
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) {
		m, err := h.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, h.config, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		v, err := h.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, h.config, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(m.Webhooks[0].ClientConfig.CABundle) > 0 && string(v.Webhooks[0].ClientConfig.CABundle) == string(m.Webhooks[0].ClientConfig.CABundle), nil
	})
}

// scope returns the pod webhook's scope condition as installed.
func (h *harness) scope() string {
	m, err := h.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), h.config, metav1.GetOptions{})
	require.NoError(h.t, err)
	for _, c := range m.Webhooks[0].MatchConditions {
		if c.Name == webhook.ScopeCondition {
			return c.Expression
		}
	}
	return ""
}

func (h *harness) waitScope(what string, cond func(string) bool) {
	h.t.Helper()
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) { return cond(h.scope()), nil })
	h.t.Logf("scope (%s): %s", what, h.scope())
}

func (h *harness) newSet(name string, selector map[string]string, mutate ...func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
	s := &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: h.ns + "-" + name, Labels: map[string]string{testLabel: h.ns}},
		Spec: appsv1alpha1.SidecarSetSpec{
			Namespace:  h.ns,
			Selector:   &metav1.LabelSelector{MatchLabels: selector},
			Containers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "side", Image: "sidecar:v1"}}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func (h *harness) createSet(s *appsv1alpha1.SidecarSet) (*appsv1alpha1.SidecarSet, error) {
	out, err := h.client.AppsV1alpha1().SidecarSets().Create(context.Background(), s, metav1.CreateOptions{})
	if err == nil {
		h.t.Cleanup(func() {
			_ = h.client.AppsV1alpha1().SidecarSets().Delete(context.Background(), s.Name, metav1.DeleteOptions{})
		})
	}
	return out, err
}

// modifySet changes a SidecarSet's spec on its newest copy (its status is
// written by the scope syncer too).
func (h *harness) modifySet(name string, mutate func(*appsv1alpha1.SidecarSet)) {
	h.t.Helper()
	require.NoError(h.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := h.client.AppsV1alpha1().SidecarSets().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(s)
		_, err = h.client.AppsV1alpha1().SidecarSets().Update(context.Background(), s, metav1.UpdateOptions{})
		return err
	}))
}

func (h *harness) createPod(name string, lbls map[string]string) (*corev1.Pod, error) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "app", Image: "app:v1"}},
			Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
			// Never scheduled: only admission matters here.
			NodeSelector: map[string]string{"flotilla.dev/none": "none"},
		},
	}
	return h.env.Kube.CoreV1().Pods(h.ns).Create(context.Background(), p, metav1.CreateOptions{})
}

func containerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// calls is how many admission requests the pod handler answered.
func (h *harness) calls() float64 {
	mfs, err := h.reg.Gather()
	require.NoError(h.t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "webhook_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "webhook") == "sidecarset-inject-pod" {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

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
	assert.Equal(t, h.ns+"-inject", p.Annotations[sidecarcontrol.InjectedListAnnotation])
	assert.Contains(t, p.Annotations[sidecarcontrol.HashAnnotation], `"sidecarSetName":"`+h.ns+`-inject"`)
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
	h.waitScope("selector", func(e string) bool { return strings.Contains(e, `"web"`) && strings.Contains(e, strconv.Quote(h.ns)) })

	h.modifySet(s.Name, func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })
	h.waitScope("paused", func(e string) bool { return e == kitwebhook.Never })

	_, err = h.createSet(h.newSet("scope2", map[string]string{"app": "api"}))
	require.NoError(t, err)
	h.waitScope("second", func(e string) bool { return strings.Contains(e, `"api"`) })
	require.NoError(t, h.client.AppsV1alpha1().SidecarSets().Delete(context.Background(), h.ns+"-scope2", metav1.DeleteOptions{}))
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
	h.waitScope("widened by a standby", func(e string) bool { return strings.Contains(e, `"web"`) && strings.Contains(e, strconv.Quote(h.ns)) })
	t.Logf("in scope %v after the create, without a leader", time.Since(start).Round(time.Millisecond))
	p, err := h.createPod("web", map[string]string{"app": "web"})
	require.NoError(t, err)
	assert.Equal(t, []string{"side", "app"}, containerNames(p))

	// Only the leader narrows: a standby leaves the deleted set's term.
	require.NoError(t, h.client.AppsV1alpha1().SidecarSets().Delete(context.Background(), h.ns+"-standby", metav1.DeleteOptions{}))
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
	applied, err := h.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(context.Background(), h.config,
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
			got, err = h.client.AppsV1alpha1().SidecarSets().Get(context.Background(), s.Name, metav1.GetOptions{})
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
	h.modifySet(s.Name, func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })
	waitCondition("paused", metav1.ConditionFalse)
	h.modifySet(s.Name, func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = false })
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
	assert.Contains(t, err.Error(), h.ns+"-first")

	_, err = h.createSet(h.newSet("disjoint", map[string]string{"app": "db"}))
	require.NoError(t, err, "same name, disjoint selectors: allowed")

	_, err = h.createSet(h.newSet("pinned", map[string]string{"app": "api"}, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Name = "other"
		s.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To("nope")}
	}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.injectionStrategy.revision.revisionName")

	s, err := h.client.AppsV1alpha1().SidecarSets().Get(context.Background(), h.ns+"-first", metav1.GetOptions{})
	require.NoError(t, err)
	s.Spec.Containers[0].UpgradeStrategy.UpgradeType = appsv1alpha1.SidecarContainerHotUpgrade
	s.Spec.Containers[0].UpgradeStrategy.HotUpgradeEmptyImage = "empty:1"
	_, err = h.client.AppsV1alpha1().SidecarSets().Update(context.Background(), s, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.containers[0].upgradeStrategy.upgradeType")
}
