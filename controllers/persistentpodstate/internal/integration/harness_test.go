// Package integration drives the PersistentPodState reconciler and its pod
// webhook through the real kube-apiserver of the local control plane: the
// reconciler runs in-process over informers limited to the test's
// namespace; the webhook is served by kit/webhook on 127.0.0.1 and each
// test installs its own copy of the shipped MutatingWebhookConfiguration
// (deploy/components/persistentpodstate/webhook.yaml) pointing at it by URL,
// limited to its namespace, its match condition kept by the scope syncer.
// apps/v1 StatefulSets are run by the control plane's
// kube-controller-manager and scheduled by kube-scheduler onto kwok nodes
// the test creates, labelled with zones and hostnames; Advanced
// StatefulSet pods are created by hand with their ownerReference (no
// StatefulSet controller runs for them here).
package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/topology"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/webhook"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	waitTimeout = 90 * time.Second
	image       = "registry.local/app:v1"
	zoneKey     = "topology.kubernetes.io/zone"
	hostKey     = "kubernetes.io/hostname"
)

type harness struct {
	*lab.Lab
	states *testenv.Objects[*appsv1alpha1.PersistentPodState]
	sets   *testenv.Objects[*appsv1.StatefulSet]
	config string
	policy admissionregistrationv1.FailurePolicyType
	wh     *lab.Webhook
	stopWH func()
	// zones maps each node the test created to its zone.
	zones map[string]string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout), policy: admissionregistrationv1.Fail, zones: map[string]string{}}
	h.states = testenv.ObjectsOf(t, h.Client.AppsV1alpha1().PersistentPodStates(h.NS), waitTimeout)
	h.states.Describe = func(p *appsv1alpha1.PersistentPodState) string { return fmt.Sprintf("%+v", p.Status) }
	h.sets = testenv.ObjectsOf(t, h.Env.Kube.AppsV1().StatefulSets(h.NS), waitTimeout)
	h.config = "flotilla-persistentpodstate-test-" + h.NS
	return h
}

// nodes creates one kwok node per zone given, each labelled with its zone
// and its hostname (kwok sets none).
func (h *harness) nodes(zones ...string) []string {
	h.T.Helper()
	var names []string
	for _, z := range zones {
		n := h.Env.KwokNodes(h.T, h.NS, 1, map[string]string{zoneKey: z})[0]
		h.Nodes().Modify(n, func(node *corev1.Node) { node.Labels[hostKey] = n })
		h.zones[n] = z
		names = append(names, n)
	}
	return names
}

// start runs the reconciler and the webhook (configuration installed as
// shipped, scope "false", then kept by the scope syncer).
func (h *harness) start() {
	h.T.Helper()
	d := h.Deps("persistentpodstate-test", h.Gates(nil, nil))
	c, err := controller.New(d)
	require.NoError(h.T, err)
	h.Start(c, 2, d)
	h.startWebhook()
}

// startWebhook serves the pod webhook as a replica does (webhook.Setup).
func (h *harness) startWebhook() {
	t := h.T
	t.Helper()
	ref := kitwebhook.ConfigRef{Kind: kitwebhook.Mutating, Name: h.config}
	h.wh = h.NewWebhook(h.NS, "persistentpodstate-webhook", ref)
	configs := h.Env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if c, err := configs.Get(context.Background(), h.config, metav1.GetOptions{}); err != nil {
		h.installConfiguration()
	} else {
		// A restarted webhook: the configuration calls its new port.
		c.Webhooks[0].ClientConfig.URL = h.wh.URL(webhook.PodPath)
		_, err := configs.Update(context.Background(), c, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	wf := flotillainformers.NewSharedInformerFactoryWithOptions(h.Client, 0, flotillainformers.WithNamespace(h.NS))
	inf := wf.Apps().V1alpha1().PersistentPodStates()
	require.NoError(t, topology.AddStateIndex(inf.Informer()))
	(&webhook.Handlers{States: inf.Informer().GetIndexer()}).Register(h.wh.Server)
	scope := webhook.NewPodScopeSyncer(h.Env.Kube, h.Client, ref, inf.Lister(), inf.Informer().HasSynced, nil)
	_, err := inf.Informer().AddEventHandler(webhook.TriggerOnChange(scope.Trigger))
	require.NoError(t, err)
	h.wh.Go(func(ctx context.Context) { _ = scope.Run(ctx, 1) })
	h.wh.Go(func(ctx context.Context) { _ = scope.ReplicaComponent().Run(ctx) })
	watch, err := kitwebhook.WatchConfig(h.Env.Kube, ref, scope.Trigger)
	require.NoError(t, err)
	h.wh.Informers(wf, watch)
	h.stopWH = h.wh.Serve()
}

// installConfiguration installs the shipped configuration under the test's
// name, calling this test's server by URL with the test's failure policy,
// limited to the test's namespace.
func (h *harness) installConfiguration() {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{}
	lab.Shipped(h.T, h.Env.RepoRoot, "persistentpodstate", "webhook.yaml", "MutatingWebhookConfiguration", webhook.ConfigName, c)
	c.ObjectMeta = metav1.ObjectMeta{Name: h.config}
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		require.NotNil(h.T, w.ClientConfig.Service)
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: h.wh.URL(*w.ClientConfig.Service.Path)}
		w.FailurePolicy = &h.policy
		sel := w.NamespaceSelector.DeepCopy()
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{h.NS}})
		w.NamespaceSelector = sel
	}
	h.InstallMutating(c)
}

// scopeExpr is the pod webhook's match condition now.
func (h *harness) scopeExpr() string {
	h.T.Helper()
	c, err := h.Env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), h.config, metav1.GetOptions{})
	require.NoError(h.T, err)
	for _, m := range c.Webhooks[0].MatchConditions {
		if m.Name == webhook.ScopeCondition {
			return m.Expression
		}
	}
	return ""
}

// statefulSet creates an apps/v1 StatefulSet of replicas pods on the test's
// nodes (Parallel, so that kube-controller-manager recreates a deleted pod
// at once), with annotations.
func (h *harness) statefulSet(name string, replicas int32, annotations map[string]string) *appsv1.StatefulSet {
	h.T.Helper()
	tmpl := lab.Template(name, image)
	tmpl.Spec.NodeSelector = map[string]string{testenv.TestNodeLabel: h.NS}
	tmpl.Spec.Tolerations = []corev1.Toleration{testenv.TestNodeToleration()}
	tmpl.Spec.TerminationGracePeriodSeconds = ptr.To(int64(0))
	return h.sets.Create(&appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: lab.Selector(name), ServiceName: name, Template: tmpl,
			PodManagementPolicy: appsv1.ParallelPodManagement},
	})
}

// persistentPodState targets the StatefulSet name of apiVersion: the
// zone required, the hostname preferred with weight.
func persistentPodState(name, apiVersion, target string, weight int32) *appsv1alpha1.PersistentPodState {
	return &appsv1alpha1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference:            appsv1alpha1.PersistentPodStateTargetReference{APIVersion: apiVersion, Kind: "StatefulSet", Name: target},
			RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zoneKey}},
			PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{Weight: weight,
				Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{hostKey}}}},
		},
	}
}

// waitReady waits until the pods app=<app> are exactly names, all Ready.
func (h *harness) waitReady(app string, names ...string) []corev1.Pod {
	h.T.Helper()
	return h.WaitPods(func() []corev1.Pod { return h.Pods("app=" + app) }, fmt.Sprintf("pods %v ready", names), func(pods []corev1.Pod) bool {
		if len(pods) != len(names) {
			return false
		}
		for i := range pods {
			if pods[i].Name != names[i] || !testenv.PodReady(&pods[i]) {
				return false
			}
		}
		return true
	})
}

// waitRecords waits until the PersistentPodState records exactly the pods
// names, each with its node and that node's zone and hostname.
func (h *harness) waitRecords(name string, pods []corev1.Pod) *appsv1alpha1.PersistentPodState {
	h.T.Helper()
	return h.states.WaitFor(name, fmt.Sprintf("records of %d pods", len(pods)), func(p *appsv1alpha1.PersistentPodState) bool {
		if len(p.Status.PodStates) != len(pods) {
			return false
		}
		for _, pod := range pods {
			s, ok := p.Status.PodStates[pod.Name]
			if !ok || s.NodeName != pod.Spec.NodeName || s.NodeTopologyLabels[zoneKey] != h.zones[pod.Spec.NodeName] ||
				s.NodeTopologyLabels[hostKey] != pod.Spec.NodeName {
				return false
			}
		}
		return true
	})
}

// recreated waits until pod name exists again under another UID, Ready
// when ready is set, and returns it.
func (h *harness) recreated(name string, old types.UID, ready bool) *corev1.Pod {
	h.T.Helper()
	var pod *corev1.Pod
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		p, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return p.UID != old && p.DeletionTimestamp == nil && (!ready || testenv.PodReady(p)), nil
	})
	return pod
}

func (h *harness) deletePod(name string) {
	h.T.Helper()
	require.NoError(h.T, h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}))
}

func podNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func testenvEventuallyContains(t *testing.T, h *harness, names []string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		e := h.scopeExpr()
		for _, n := range names {
			if !strings.Contains(e, `"`+n+`"`) {
				return false, fmt.Errorf("scope %q lacks %s", e, n)
			}
		}
		return true, nil
	})
	h.AwaitInEffect(kitwebhook.Mutating)
}
