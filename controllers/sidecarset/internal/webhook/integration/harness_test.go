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
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/webhook"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	waitTimeout = 60 * time.Second
	testLabel   = "flotilla.dev/sidecarset-webhook-test"
)

type harness struct {
	*lab.Lab
	sets   *testenv.Objects[*appsv1alpha1.SidecarSet]
	config string // name of both webhook configurations
	policy admissionregistrationv1.FailurePolicyType
	wh     *lab.Webhook
	stop   func()
	// standby runs this process as a replica that does not lead: no
	// leader's scope syncer, only what every replica runs.
	standby bool
}

func newHarness(t *testing.T, policy admissionregistrationv1.FailurePolicyType) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout), policy: policy}
	h.sets = testenv.ObjectsOf[*appsv1alpha1.SidecarSet](t, h.Client.AppsV1alpha1().SidecarSets(), waitTimeout)
	h.config = "flotilla-test-" + h.NS
	h.wh = h.NewWebhook(h.NS, "sidecarset-webhook",
		kitwebhook.ConfigRef{Kind: kitwebhook.Mutating, Name: h.config}, kitwebhook.ConfigRef{Kind: kitwebhook.Validating, Name: h.config})
	h.installConfigurations()
	return h
}

// installConfigurations creates the test's webhook configurations as the
// manifests do: no caBundle (the webhook writes it), the pod scope
// condition "false" until the scope syncer computed it.
func (h *harness) installConfigurations() {
	none := admissionregistrationv1.SideEffectClassNone
	h.InstallMutating(h.shippedMutating())
	h.InstallValidating(&admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: h.config},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "validate.sidecarsets.flotilla.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: h.wh.URL(webhook.SidecarSetPath)},
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule("apps.kruise.io", "v1alpha1", "sidecarsets", admissionregistrationv1.Create, admissionregistrationv1.Update)},
			FailurePolicy:           &h.policy,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(5)),
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{testLabel: h.NS}},
		}},
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
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: h.wh.URL(webhook.PodPath)},
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule("", "v1", "pods", admissionregistrationv1.Create)},
			FailurePolicy:           &h.policy,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(5)),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: h.NS}},
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
	h.T.Helper()
	mine := func(o *metav1.ListOptions) { o.LabelSelector = labels.Set{testLabel: h.NS}.String() }
	sets := flotillainformers.NewSharedInformerFactoryWithOptions(h.Client, 0, flotillainformers.WithTweakListOptions(mine))
	setInf := sets.Apps().V1alpha1().SidecarSets()
	kube := informers.NewSharedInformerFactory(h.Env.Kube, 0)
	nsInf := kube.Core().V1().Namespaces()
	sys := informers.NewSharedInformerFactoryWithOptions(h.Env.Kube, 0, informers.WithNamespace(h.NS))
	revInf := sys.Apps().V1().ControllerRevisions()
	require.NoError(h.T, revInf.Informer().AddIndexers(cache.Indexers{sidecarcontrol.RevisionIndex: sidecarcontrol.IndexRevisionBySidecarSet}))
	cmInf := sys.Core().V1().ConfigMaps()
	(&webhook.Handlers{
		Sets: setInf.Lister(), Namespaces: nsInf.Lister(), Kube: h.Env.Kube,
		Revisions:  sidecarcontrol.RevisionIndexer{Indexer: revInf.Informer().GetIndexer()},
		ConfigMaps: cmInf.Lister(), SystemNamespace: h.NS,
	}).Register(h.wh.Server)

	ref := kitwebhook.ConfigRef{Kind: kitwebhook.Mutating, Name: h.config}
	scope := webhook.NewPodScopeSyncer(h.Env.Kube, h.Client, ref, setInf.Lister(), setInf.Informer().HasSynced, true, nil)
	_, err := setInf.Informer().AddEventHandler(webhook.TriggerOnChange(scope.Trigger))
	require.NoError(h.T, err)
	watch, err := kitwebhook.WatchConfig(h.Env.Kube, ref, scope.Trigger)
	require.NoError(h.T, err)
	h.wh.Informers(sets, kube, sys, watch)
	h.wh.Go(func(ctx context.Context) { _ = scope.ReplicaComponent().Run(ctx) })
	if !h.standby {
		h.wh.Go(func(ctx context.Context) { _ = scope.Run(ctx, 1) })
	}
	h.stop = h.wh.Serve()
}

// scope returns the pod webhook's scope condition as installed.
func (h *harness) scope() string {
	m, err := h.Env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), h.config, metav1.GetOptions{})
	require.NoError(h.T, err)
	for _, c := range m.Webhooks[0].MatchConditions {
		if c.Name == webhook.ScopeCondition {
			return c.Expression
		}
	}
	return ""
}

func (h *harness) waitScope(what string, cond func(string) bool) {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) { return cond(h.scope()), nil })
	h.AwaitInEffect(kitwebhook.Mutating)
	h.T.Logf("scope (%s): %s", what, h.scope())
}

func (h *harness) newSet(name string, selector map[string]string, mutate ...func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
	s := &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: h.NS + "-" + name, Labels: map[string]string{testLabel: h.NS}},
		Spec: appsv1alpha1.SidecarSetSpec{
			Namespace:  h.NS,
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
	out, err := h.Client.AppsV1alpha1().SidecarSets().Create(context.Background(), s, metav1.CreateOptions{})
	if err == nil {
		h.T.Cleanup(func() {
			_ = h.Client.AppsV1alpha1().SidecarSets().Delete(context.Background(), s.Name, metav1.DeleteOptions{})
		})
	}
	return out, err
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
	return h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), p, metav1.CreateOptions{})
}

func containerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// calls is how many admission requests the pod handler answered.
func (h *harness) calls() float64 { h.T.Helper(); return h.wh.Requests("sidecarset-inject-pod") }
