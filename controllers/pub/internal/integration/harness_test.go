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
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/webhook"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/workload"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const waitTimeout = 90 * time.Second

// Images pods run; kwok never pulls them.
const (
	imageV1 = "registry.local/app:v1"
	imageV2 = "registry.local/app:v2"
)

type harness struct {
	t   *testing.T
	env *testenv.Env
	// ns holds the test's budgets and pods; home the webhook's certificate
	// Secret (the same namespace, unless the test works in one it does not
	// own, such as kube-system).
	ns     string
	home   string
	client versioned.Interface
	pubs   *testenv.Objects[*policyv1alpha1.PodUnavailableBudget]
	config string
	policy admissionregistrationv1.FailurePolicyType
	port   int
	gates  map[featuregate.Feature]bool
	reg    *prometheus.Registry
	stopWH func()
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	return newHarnessIn(t, env, ns, ns)
}

// newHarnessIn works in namespace ns, keeping its own objects in home.
func newHarnessIn(t *testing.T, env *testenv.Env, ns, home string) *harness {
	t.Helper()
	h := &harness{t: t, env: env, ns: ns, home: home, client: versioned.NewForConfigOrDie(env.Config),
		policy: admissionregistrationv1.Fail, gates: map[featuregate.Feature]bool{features.PodUnavailableBudgetUpdateGate: true}}
	h.pubs = testenv.ObjectsOf(t, h.client.PolicyV1alpha1().PodUnavailableBudgets(h.ns), waitTimeout)
	h.pubs.Describe = func(p *policyv1alpha1.PodUnavailableBudget) string { return fmt.Sprintf("%+v", p.Status) }
	h.config = "flotilla-pub-test-" + h.home
	return h
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start installs the webhook configuration as the manifests do (no
// caBundle, scope "false"), then runs the reconciler and what a replica
// runs for the guard, and returns once the guard serves and the scope
// syncers have written the scope.
func (h *harness) start() {
	t := h.t
	t.Helper()
	h.port = freePort(t)
	h.installConfiguration()
	gate := features.MustNewGate(features.PodUnavailableBudgetDeleteGate, features.PodUnavailableBudgetUpdateGate, features.InPlacePodVerticalScaling)
	for g, v := range h.gates {
		require.NoError(t, gate.SetFromMap(map[string]bool{string(g): v}))
	}
	scheme, err := wiring.NewScheme()
	require.NoError(t, err)
	recorder := testenv.EventRecorder(t, h.env.Kube, h.ns, "pub-test", scheme)
	finder, err := workload.New(h.env.Config)
	require.NoError(t, err)

	kube := informers.NewSharedInformerFactoryWithOptions(h.env.Kube, 0, informers.WithNamespace(h.ns), informers.WithTransform(kitcontroller.StripManagedFields))
	flot := flotillainformers.NewSharedInformerFactoryWithOptions(h.client, 0, flotillainformers.WithNamespace(h.ns))
	c, err := controller.New(controller.Deps{Finder: finder, WatchWorkloads: true, Deps: wiring.Deps{
		Kube: h.env.Kube, Client: h.client, KubeInformers: kube, Informers: flot,
		Recorder: recorder, QueueOptions: kitcontroller.DefaultQueueOptions(),
	}})
	require.NoError(t, err)
	testenv.StartController(t, c, 2, kube, flot)

	// The replica side: its own budget cache, like webhook.Setup.
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().WithValues("test", t.Name())))
	wf := flotillainformers.NewSharedInformerFactoryWithOptions(h.client, 0, flotillainformers.WithNamespace(h.ns))
	pubInf := wf.Policy().V1alpha1().PodUnavailableBudgets()
	h.reg = prometheus.NewRegistry()
	opts := kitwebhook.Options{Host: "127.0.0.1", Port: h.port, SecretName: "webhook-certs", Namespace: h.home, ServiceName: "pub-webhook"}
	comp, err := kitwebhook.New(opts, h.env.Kube, h.reg, nil, kitwebhook.ConfigRef{Kind: kitwebhook.Validating, Name: h.config})
	require.NoError(t, err)
	(&webhook.Guard{Pubs: pubInf.Lister(), Client: h.client, Kube: h.env.Kube, Gates: gate, Recorder: recorder, Finder: finder}).Register(comp.Server)
	(&webhook.Validator{Client: h.client}).Register(comp.Server)
	syncers := webhook.NewScopeSyncers(h.env.Kube, h.client, pubInf.Lister(), pubInf.Informer().HasSynced, h.config)
	var triggers []func()
	for _, s := range syncers {
		_, err := pubInf.Informer().AddEventHandler(webhook.TriggerOnChange(s.Trigger))
		require.NoError(t, err)
		triggers = append(triggers, s.Trigger)
	}
	watch, err := kitwebhook.WatchConfig(h.env.Kube, kitwebhook.ConfigRef{Kind: kitwebhook.Validating, Name: h.config}, triggers...)
	require.NoError(t, err)
	wf.Start(ctx.Done())
	watch.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), pubInf.Informer().HasSynced)
	watch.WaitForCacheSync(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := comp.Run(ctx); err != nil {
			t.Errorf("webhook: %v", err)
		}
	})
	for _, s := range syncers {
		wg.Go(func() { _ = s.Run(ctx, 1) })                 // the leader's
		wg.Go(func() { _ = s.ReplicaComponent().Run(ctx) }) // every replica's (widens)
	}
	var once sync.Once
	h.stopWH = func() { once.Do(func() { cancel(); wg.Wait(); wf.Shutdown(); watch.Shutdown() }) }
	t.Cleanup(h.stopWH)
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return comp.Ready() == nil, nil })
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		v, err := h.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, h.config, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, w := range v.Webhooks {
			if len(w.ClientConfig.CABundle) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

// installConfiguration installs the shipped webhook configuration under the
// test's name: each entry calls this test's server by URL with the test's
// failure policy, and its shipped namespaceSelector is narrowed to the
// test's namespace (the other tests' namespaces are not this server's to
// guard).
func (h *harness) installConfiguration() {
	v := shippedConfiguration(h.t, h.env.RepoRoot)
	v.ObjectMeta = metav1.ObjectMeta{Name: h.config}
	for i := range v.Webhooks {
		w := &v.Webhooks[i]
		require.NotNil(h.t, w.ClientConfig.Service, "shipped entry %s calls the Service", w.Name)
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", h.port, *w.ClientConfig.Service.Path))}
		w.FailurePolicy = &h.policy
		w.NamespaceSelector = onlyNamespace(w.NamespaceSelector, h.ns)
	}
	_, err := h.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), v, metav1.CreateOptions{})
	require.NoError(h.t, err)
	h.t.Cleanup(func() {
		_ = h.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), h.config, metav1.DeleteOptions{})
	})
}

// shippedConfiguration reads the ValidatingWebhookConfiguration of
// deploy/components/pub/webhook.yaml.
func shippedConfiguration(t *testing.T, root string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	path := filepath.Join(root, "deploy", "components", "pub", "webhook.yaml")
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var v admissionregistrationv1.ValidatingWebhookConfiguration
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			t.Fatalf("no ValidatingWebhookConfiguration %s in %s", webhook.ConfigName, path)
		}
		require.NoError(t, err, "decode %s", path)
		if v.Kind == "ValidatingWebhookConfiguration" && v.Name == webhook.ConfigName {
			return &v
		}
	}
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
// namespace (a budget exists).
func (h *harness) waitScoped() {
	h.t.Helper()
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) {
		v, err := h.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), h.config, metav1.GetOptions{})
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
	h.t.Helper()
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
		_, err := h.env.Kube.CoreV1().Pods(h.ns).Create(context.Background(), p, metav1.CreateOptions{})
		require.NoError(h.t, err)
	}
}

// pods returns the live pods app=<app>, by name.
func (h *harness) pods(app string) []corev1.Pod {
	h.t.Helper()
	list, err := h.env.Kube.CoreV1().Pods(h.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	require.NoError(h.t, err)
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (h *harness) waitReady(app string, n int) []corev1.Pod {
	h.t.Helper()
	var pods []corev1.Pod
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) {
		pods = h.pods(app)
		ready := 0
		for i := range pods {
			if testenv.PodReady(&pods[i]) {
				ready++
			}
		}
		return ready == n && len(pods) == n, nil
	})
	return pods
}

// waitStatus polls until the budget's status of its generation satisfies cond.
func (h *harness) waitStatus(name, what string, cond func(policyv1alpha1.PodUnavailableBudgetStatus) bool) *policyv1alpha1.PodUnavailableBudget {
	h.t.Helper()
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
	return h.env.Kube.CoreV1().Pods(h.ns).Delete(context.Background(), name, o)
}

func ownerRef(apiVersion, kind, name string, uid types.UID) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}
}
