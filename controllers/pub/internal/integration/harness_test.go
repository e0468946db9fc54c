// Package integration drives the PodUnavailableBudget reconciler and its
// guard through the real kube-apiserver of the local control plane: the
// reconciler runs in-process over informers limited to the test's
// namespace, the guard is served by kit/webhook on 127.0.0.1 with
// certificates generated into a Secret, and each test installs its own
// copy of the shipped ValidatingWebhookConfiguration
// (deploy/components/pub/webhook.yaml: rules, namespaceSelector, initial
// match conditions) pointing at it by URL and limited to its namespace; the
// leader's scope syncers keep its match conditions.
package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/webhook"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/workload"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const waitTimeout = 90 * time.Second

// Images pods run; kwok never pulls them.
const (
	imageV1 = "registry.local/app:v1"
	imageV2 = "registry.local/app:v2"
)

type harness struct {
	*lab.Lab
	// home holds the webhook's certificate Secret: the test's own
	// namespace, also NS unless the test works in one it does not own,
	// such as kube-system.
	home   string
	pubs   *testenv.Objects[*policyv1alpha1.PodUnavailableBudget]
	config string
	policy admissionregistrationv1.FailurePolicyType
	gates  map[featuregate.Feature]bool
	wh     *lab.Webhook
	stopWH func()
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessIn(t, "")
}

// newHarnessIn works in namespace ns (the test's own if empty), keeping its
// own objects in the test's own namespace.
func newHarnessIn(t *testing.T, ns string) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout), policy: admissionregistrationv1.Fail,
		gates: map[featuregate.Feature]bool{features.PodUnavailableBudgetUpdateGate: true}}
	h.home = h.NS
	if ns != "" {
		h.NS = ns
	}
	h.pubs = testenv.ObjectsOf(t, h.Client.PolicyV1alpha1().PodUnavailableBudgets(h.NS), waitTimeout)
	h.pubs.Describe = func(p *policyv1alpha1.PodUnavailableBudget) string { return fmt.Sprintf("%+v", p.Status) }
	h.config = "flotilla-pub-test-" + h.home
	return h
}

// start installs the webhook configuration as the manifests do (no
// caBundle, scope "false"), then runs the reconciler and what a replica
// runs for the guard, and returns once the guard serves and the scope
// syncers have written the scope.
func (h *harness) start() {
	t := h.T
	t.Helper()
	ref := kitwebhook.ConfigRef{Kind: kitwebhook.Validating, Name: h.config}
	h.wh = h.NewWebhook(h.home, "pub-webhook", ref)
	h.installConfiguration()
	d := h.Deps("pub-test", h.Gates([]featuregate.Feature{features.PodUnavailableBudgetDeleteGate,
		features.PodUnavailableBudgetUpdateGate, features.InPlacePodVerticalScaling}, h.gates))
	finder, err := workload.New(h.Env.Config)
	require.NoError(t, err)
	c, err := controller.New(controller.Deps{Finder: finder, WatchWorkloads: true, Deps: d})
	require.NoError(t, err)
	h.Start(c, 2, d)

	// The replica side: its own budget cache, like webhook.Setup.
	wf := flotillainformers.NewSharedInformerFactoryWithOptions(h.Client, 0, flotillainformers.WithNamespace(h.NS))
	pubInf := wf.Policy().V1alpha1().PodUnavailableBudgets()
	(&webhook.Guard{Pubs: pubInf.Lister(), Client: h.Client, Kube: h.Env.Kube, Gates: d.Gates, Recorder: d.Recorder, Finder: finder}).Register(h.wh.Server)
	(&webhook.Validator{Client: h.Client}).Register(h.wh.Server)
	syncers := webhook.NewScopeSyncers(h.Env.Kube, h.Client, pubInf.Lister(), pubInf.Informer().HasSynced, h.config)
	var triggers []func()
	for _, s := range syncers {
		_, err := pubInf.Informer().AddEventHandler(webhook.TriggerOnChange(s.Trigger))
		require.NoError(t, err)
		triggers = append(triggers, s.Trigger)
		h.wh.Go(func(ctx context.Context) { _ = s.Run(ctx, 1) })                 // the leader's
		h.wh.Go(func(ctx context.Context) { _ = s.ReplicaComponent().Run(ctx) }) // every replica's (widens)
	}
	watch, err := kitwebhook.WatchConfig(h.Env.Kube, ref, triggers...)
	require.NoError(t, err)
	h.wh.Informers(wf, watch)
	h.stopWH = h.wh.Serve()
}

// installConfiguration installs the shipped webhook configuration under the
// test's name: each entry calls this test's server by URL with the test's
// failure policy, and its shipped namespaceSelector is narrowed to the
// test's namespace (the other tests' namespaces are not this server's to
// guard).
func (h *harness) installConfiguration() {
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	lab.Shipped(h.T, h.Env.RepoRoot, "pub", "webhook.yaml", "ValidatingWebhookConfiguration", webhook.ConfigName, v)
	v.ObjectMeta = metav1.ObjectMeta{Name: h.config}
	for i := range v.Webhooks {
		w := &v.Webhooks[i]
		require.NotNil(h.T, w.ClientConfig.Service, "shipped entry %s calls the Service", w.Name)
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: h.wh.URL(*w.ClientConfig.Service.Path)}
		w.FailurePolicy = &h.policy
		w.NamespaceSelector = onlyNamespace(w.NamespaceSelector, h.NS)
	}
	h.InstallValidating(v)
}

// onlyNamespace is sel narrowed to namespace ns.
func onlyNamespace(sel *metav1.LabelSelector, ns string) *metav1.LabelSelector {
	out := &metav1.LabelSelector{}
	if sel != nil {
		out = sel.DeepCopy()
	}
	out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{ns}})
	return out
}

// waitScoped waits until the scope syncers opened the scope to the test's
// namespace (a budget exists) and the API server admits through that scope.
func (h *harness) waitScoped() {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		v, err := h.Env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), h.config, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, w := range v.Webhooks {
			if len(w.MatchConditions) > 0 && w.MatchConditions[0].Expression == kitwebhook.Never {
				return false, nil
			}
		}
		return true, nil
	})
	h.AwaitInEffect(kitwebhook.Validating)
}

// newPub builds a budget over pods labelled app=<app> with maxUnavailable.
func newPub(name, app, maxUnavailable string, mutate ...func(*policyv1alpha1.PodUnavailableBudget)) *policyv1alpha1.PodUnavailableBudget {
	v := intstr.Parse(maxUnavailable)
	p := &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			MaxUnavailable: &v,
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// createPods creates n pods app=<app> named <app>-<i>, owned by owner if
// given; they run on the shared kwok nodes, which make them Running and
// Ready.
func (h *harness) createPods(app string, n int, owner *metav1.OwnerReference, mutate ...func(*corev1.Pod)) {
	h.T.Helper()
	for i := range n {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i), Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{
				Containers:                    []corev1.Container{{Name: "main", Image: imageV1}},
				TerminationGracePeriodSeconds: ptr.To(int64(0)),
			},
		}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		for _, m := range mutate {
			m(p)
		}
		_, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), p, metav1.CreateOptions{})
		require.NoError(h.T, err)
	}
}

// pods returns the live pods app=<app>, by name.
func (h *harness) pods(app string) []corev1.Pod { h.T.Helper(); return h.Pods("app=" + app) }

// waitReady waits until exactly n pods app=<app> live, all Ready.
func (h *harness) waitReady(app string, n int) []corev1.Pod {
	h.T.Helper()
	return h.WaitPods(func() []corev1.Pod { return h.pods(app) }, fmt.Sprintf("%d pods %s ready", n, app), func(pods []corev1.Pod) bool {
		ready := 0
		for i := range pods {
			if testenv.PodReady(&pods[i]) {
				ready++
			}
		}
		return ready == n && len(pods) == n
	})
}

// waitStatus polls until the budget's status of its generation satisfies cond.
func (h *harness) waitStatus(name, what string, cond func(policyv1alpha1.PodUnavailableBudgetStatus) bool) *policyv1alpha1.PodUnavailableBudget {
	h.T.Helper()
	return h.pubs.WaitFor(name, what, func(p *policyv1alpha1.PodUnavailableBudget) bool {
		return p.Status.ObservedGeneration == p.Generation && cond(p.Status)
	})
}

func counts(allowed, current, desired, total int32) func(policyv1alpha1.PodUnavailableBudgetStatus) bool {
	return func(s policyv1alpha1.PodUnavailableBudgetStatus) bool {
		return s.UnavailableAllowed == allowed && s.CurrentAvailable == current && s.DesiredAvailable == desired && s.TotalReplicas == total
	}
}

func (h *harness) deletePod(name string, opts ...func(*metav1.DeleteOptions)) error {
	o := metav1.DeleteOptions{}
	for _, f := range opts {
		f(&o)
	}
	return h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), name, o)
}

func ownerRef(apiVersion, kind, name string, uid types.UID) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}
}
