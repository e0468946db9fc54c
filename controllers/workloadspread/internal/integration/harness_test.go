// Package integration drives the WorkloadSpread reconciler and its webhooks
// through the real kube-apiserver of the local control plane: the
// reconciler runs in-process over informers limited to the test's
// namespace, the webhooks are served by kit/webhook on 127.0.0.1, and each
// test installs its own copy of the shipped webhook configurations
// (deploy/components/workloadspread/webhook.yaml) pointing at it by URL and
// limited to its namespace; the scope syncers keep their match conditions.
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
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/webhook"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/workload"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const waitTimeout = 90 * time.Second

const image = "registry.local/app:v1"

type harness struct {
	*lab.Lab
	spreads *testenv.Objects[*appsv1alpha1.WorkloadSpread]
	config  string
	policy  admissionregistrationv1.FailurePolicyType
	wh      *lab.Webhook
	stopWH  func()
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout), policy: admissionregistrationv1.Fail}
	h.spreads = testenv.ObjectsOf(t, h.Client.AppsV1alpha1().WorkloadSpreads(h.NS), waitTimeout)
	h.spreads.Describe = func(w *appsv1alpha1.WorkloadSpread) string { return fmt.Sprintf("%+v", w.Status) }
	h.config = "flotilla-ws-test-" + h.NS
	return h
}

// start runs the reconciler and the webhooks.
func (h *harness) start() {
	h.T.Helper()
	h.startController()
	h.startWebhook()
}

func (h *harness) startController() {
	d := h.Deps("workloadspread-test", h.Gates([]featuregate.Feature{features.WorkloadSpread, features.PodWebhook}, nil))
	c, err := controller.New(d)
	require.NoError(h.T, err)
	h.Start(c, 2, d)
}

// startWebhook installs the shipped configurations (scope "false") and runs
// what a replica runs, as webhook.Setup; it returns once the server serves.
func (h *harness) startWebhook() {
	t := h.T
	refs := []kitwebhook.ConfigRef{{Kind: kitwebhook.Mutating, Name: h.config}, {Kind: kitwebhook.Validating, Name: h.config}}
	h.wh = h.NewWebhook(h.NS, "workloadspread-webhook", refs...)
	h.installConfigurations()
	wf := flotillainformers.NewSharedInformerFactoryWithOptions(h.Client, 0, flotillainformers.WithNamespace(h.NS))
	wsInf := wf.Apps().V1alpha1().WorkloadSpreads()
	(&webhook.Handlers{Spreads: wsInf.Lister(), Client: h.Client, Kube: h.Env.Kube,
		Targets: workload.Client{Kube: h.Env.Kube, Kruise: h.Client}}).Register(h.wh.Server)
	syncers := webhook.NewScopeSyncers(h.Env.Kube, h.Client, wsInf.Lister(), wsInf.Informer().HasSynced, h.config, nil)
	var triggers []func()
	for _, s := range syncers {
		_, err := wsInf.Informer().AddEventHandler(kitwebhook.TriggerOnSpecChange(s.Trigger))
		require.NoError(t, err)
		triggers = append(triggers, s.Trigger)
		h.wh.Go(func(ctx context.Context) { _ = s.Run(ctx, 1) })
		h.wh.Go(func(ctx context.Context) { _ = s.ReplicaComponent().Run(ctx) })
	}
	for _, ref := range refs {
		watch, err := kitwebhook.WatchConfig(h.Env.Kube, ref, triggers...)
		require.NoError(t, err)
		h.wh.Informers(watch)
	}
	h.wh.Informers(wf)
	h.stopWH = h.wh.Serve()
}

// installConfigurations installs the shipped configurations under the
// test's name, calling this test's server by URL, the mutating entry and
// the WorkloadSpread validation with the test's failure policy, every
// entry limited to the test's namespace.
func (h *harness) installConfigurations() {
	m, v := shipped(h.T, h.Env.RepoRoot)
	m.ObjectMeta, v.ObjectMeta = metav1.ObjectMeta{Name: h.config}, metav1.ObjectMeta{Name: h.config}
	for i := range m.Webhooks {
		w := &m.Webhooks[i]
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: h.wh.URL(*w.ClientConfig.Service.Path)}
		w.FailurePolicy = &h.policy
		w.NamespaceSelector = onlyNamespace(w.NamespaceSelector, h.NS)
	}
	for i := range v.Webhooks {
		w := &v.Webhooks[i]
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: h.wh.URL(*w.ClientConfig.Service.Path)}
		if w.Name == "validate.workloadspreads.workloadspread.flotilla.dev" {
			w.FailurePolicy = &h.policy
		}
		w.NamespaceSelector = onlyNamespace(w.NamespaceSelector, h.NS)
	}
	h.InstallMutating(m)
	h.InstallValidating(v)
}

// shipped reads both configurations of deploy/components/workloadspread/webhook.yaml.
func shipped(t *testing.T, root string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	var m admissionregistrationv1.MutatingWebhookConfiguration
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	lab.Shipped(t, root, "workloadspread", "webhook.yaml", "MutatingWebhookConfiguration", "", &m)
	lab.Shipped(t, root, "workloadspread", "webhook.yaml", "ValidatingWebhookConfiguration", "", &v)
	return &m, &v
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

// waitInScope waits until ws's WebhookInScope condition is True and the API
// server admits through the scope it reports: pods created from then on go
// through the webhook.
func (h *harness) waitInScope(name string) {
	h.T.Helper()
	h.spreads.WaitFor(name, "WebhookInScope=True", func(w *appsv1alpha1.WorkloadSpread) bool {
		for _, c := range w.Status.Conditions {
			if c.Type == kitwebhook.InScopeCondition && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation {
				return true
			}
		}
		return false
	})
	h.AwaitInEffect(kitwebhook.Mutating)
	h.AwaitInEffect(kitwebhook.Validating)
}

// subset is a WorkloadSpread subset on zone (the shared kwok nodes carry
// topology.kubernetes.io/zone=zone-0..2), limited to max ("" unlimited).
func subset(name, zone, max string) appsv1alpha1.WorkloadSpreadSubset {
	s := appsv1alpha1.WorkloadSpreadSubset{Name: name, RequiredNodeSelectorTerm: &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}
	if max != "" {
		v := intstr.Parse(max)
		s.MaxReplicas = &v
	}
	return s
}

func newSpread(name, apiVersion, kind, target string, subsets ...appsv1alpha1.WorkloadSpreadSubset) *appsv1alpha1.WorkloadSpread {
	return &appsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1alpha1.WorkloadSpreadSpec{
		TargetReference: &appsv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: target}, Subsets: subsets}}
}

// cloneSet creates a CloneSet no controller runs in this test: pods the
// test creates with it as controller stay as they are.
func (h *harness) cloneSet(name string, replicas int32) *appsv1alpha1.CloneSet {
	h.T.Helper()
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1alpha1.CloneSetSpec{
		Replicas: ptr.To(replicas), Selector: lab.Selector(name), Template: lab.Template(name, image)}}
	out, err := h.Client.AppsV1alpha1().CloneSets(h.NS).Create(context.Background(), cs, metav1.CreateOptions{})
	require.NoError(h.T, err)
	return out
}

// ownedPod is a pod app=<app> controlled by the CloneSet cs (generateName
// when name is "").
func ownedPod(cs *appsv1alpha1.CloneSet, name string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": cs.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet"))}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}, TerminationGracePeriodSeconds: ptr.To(int64(0))},
	}
	if name == "" {
		p.GenerateName = cs.Name + "-"
	}
	return p
}

// subsetOf is the subset a pod's annotation names ("" none).
func subsetOf(p *corev1.Pod) string {
	if in := spread.InjectedOf(p); in != nil {
		return in.Subset
	}
	return ""
}

// subsetStatus returns ws's status of subset name.
func subsetStatus(w *appsv1alpha1.WorkloadSpread, name string) *appsv1alpha1.WorkloadSpreadSubsetStatus {
	for i := range w.Status.SubsetStatuses {
		if w.Status.SubsetStatuses[i].Name == name {
			return &w.Status.SubsetStatuses[i]
		}
	}
	return nil
}
