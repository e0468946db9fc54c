package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const (
	guide        = "docs/migrating-from-openkruise.md"
	kruiseNS     = "kruise-system"
	kruiseSample = "flotilla.dev/migration-sample"
)

// TestMigrateFromOpenKruise runs every command of docs/migrating-from-openkruise.md, in order, on a cluster that
// looks like an OpenKruise v1.9 install from the API (its manager and daemon, its webhook configurations with
// failurePolicy Fail behind a Service with no endpoints, its field manager on the CRDs' conversion stanza), and
// checks what the guide says: OpenKruise's controllers are stopped, its webhooks gone, Flotilla's features running,
// DaemonSets readable at both versions, the workloads' pods and revisions untouched; then the guide's roll back.
//
// The workloads stand for what OpenKruise leaves: they are written by Flotilla's controllers, whose revisions are
// byte-equal to OpenKruise v1.9's; each controller's TestTakeoverFromOpenKruise starts from objects exactly as
// OpenKruise writes them.
func TestMigrateFromOpenKruise(t *testing.T) {
	in := newInstaller(t)
	ctx := context.Background()
	steps := guideSteps(t, filepath.Join(in.env.RepoRoot, guide))
	require.Equal(t, []string{"backup", "stop", "webhooks", "crds", "install", "verify", "rollback"}, stepNames(steps),
		"the guide's steps, in the order this test runs them")
	features := []string{"cloneset", "daemonset", "sidecarset-kruise-system"}
	in.shared()
	// Whatever happens, leave the CRDs as Flotilla ships them (the conversion stanzas are rewritten below).
	t.Cleanup(in.shared)
	ns := in.env.Namespace(t)
	standInForOpenKruise(t, in)
	t.Cleanup(func() { removeOpenKruise(in) })

	// The workloads, as the previous controller leaves them: then nothing runs them.
	for _, f := range features {
		in.install(f)
	}
	workloads(t, in, ns)
	for i := len(features) - 1; i >= 0; i-- {
		in.uninstall(features[i])
	}
	kruiseWebhooks(t, in)
	kruiseOwnsTheConversion(t, in)
	before := snapshot(t, in, ns)
	_, err := in.client.AppsV1alpha1().CloneSets(ns).Patch(ctx, "web", "application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	require.Error(t, err, "OpenKruise's webhook, failurePolicy Fail, with its manager stopped refuses CloneSet writes")
	assert.Contains(t, err.Error(), "kruise-webhook-service")

	work := t.TempDir()
	run := func(step string) { runStep(t, in, work, steps, step, features) }
	run("backup")
	run("stop")
	assertKruiseStopped(t, in)
	run("webhooks")
	for _, f := range features {
		root := *in
		root.t = t
		t.Cleanup(func() { root.kubectl("delete", "--ignore-not-found", "-k", root.pinned(f)) })
	}
	run("crds")
	run("install")
	run("verify")

	// What the guide says the verify step shows.
	for _, f := range features {
		for _, d := range in.deployments(f) {
			in.waitAvailable(d)
		}
	}
	_, err = in.client.AppsV1alpha1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	require.NoError(t, err, "v1alpha1 DaemonSet, converted by daemonset-controller")
	_, err = in.client.AppsV1beta1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	require.NoError(t, err, "v1beta1 DaemonSet, the storage version")
	waitCloneSet(t, in, ns, "web", "status current under Flotilla", func(s appsv1alpha1.CloneSetStatus) bool {
		return s.ReadyReplicas == 2 && s.UpdatedReadyReplicas == 2
	})
	_, err = in.client.AppsV1alpha1().CloneSets(ns).Patch(ctx, "web", "application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err, "CloneSet writes are admitted again")
	assert.Equal(t, before, snapshot(t, in, ns), "no pod deleted, restarted or relabelled; no ControllerRevision added")

	run("rollback")
	in.assertAbsent("cloneset", "daemonset", "sidecarset")
	for _, name := range []string{"kruise-mutating-webhook-configuration", "kruise-validating-webhook-configuration"} {
		_, err := in.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		_, verr := in.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		assert.True(t, err == nil || verr == nil, "%s restored from the backup", name)
	}
	m, err := in.env.Kube.AppsV1().Deployments(kruiseNS).Get(ctx, "kruise-controller-manager", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), ptrValue(m.Spec.Replicas), "kruise-controller-manager scaled back to its replicas")
	d, err := in.env.Kube.AppsV1().DaemonSets(kruiseNS).Get(ctx, "kruise-daemon", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"type": "kwok"}, d.Spec.Template.Spec.NodeSelector, "kruise-daemon placed as before")
	assert.Equal(t, before, snapshot(t, in, ns), "the roll back touches no workload either")
}

type guideStep struct{ name, script string }

// guideSteps reads the `sh` blocks of the guide, each named by the `<!-- step: name -->` line before it; a block
// without a name fails the test, so no command of the guide goes unrun.
func guideSteps(t *testing.T, path string) []guideStep {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)(?:<!-- step: ([a-z-]+) -->\n)?```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	var steps []guideStep
	for _, m := range blocks {
		require.NotEmpty(t, m[1], "%s: a sh block without a step name:\n%s", path, m[2])
		steps = append(steps, guideStep{m[1], m[2]})
	}
	return steps
}

func stepNames(steps []guideStep) []string {
	var names []string
	for _, s := range steps {
		names = append(names, s.name)
	}
	return names
}

// runStep runs a step of the guide with bash in dir, the features' overlays replaced by the ones pinned to this
// checkout's images, and the others (namespace, crds) by their path in the checkout.
func runStep(t *testing.T, in *installer, dir string, steps []guideStep, name string, features []string) {
	t.Helper()
	var script string
	for _, s := range steps {
		if s.name == name {
			script = s.script
		}
	}
	require.NotEmpty(t, script, "step %s", name)
	for _, f := range features {
		script = strings.ReplaceAll(script, "-k deploy/overlays/"+f+"\n", "-k "+in.pinned(f)+"\n")
	}
	script = strings.ReplaceAll(script, "-k deploy/", "-k "+in.env.RepoRoot+"/deploy/")
	start := time.Now()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+in.env.KubeconfigPath)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "guide step %s:\n%s\n%s", name, script, out)
	t.Logf("guide step %s (%.1f s):\n%s", name, time.Since(start).Seconds(), out)
}

// standInForOpenKruise creates what an OpenKruise v1.9 install shows through the API: the kruise-system
// namespace, kruise-controller-manager (2 replicas) behind kruise-webhook-service and kruise-daemon. Their pods run
// on the kwok nodes: only their presence matters here.
func standInForOpenKruise(t *testing.T, in *installer) {
	ctx := context.Background()
	kube := in.env.Kube
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kruiseNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	podSpec := corev1.PodSpec{
		NodeSelector: map[string]string{"type": "kwok"},
		Tolerations:  []corev1.Toleration{testenv.TestNodeToleration()},
		Containers:   []corev1.Container{{Name: "manager", Image: "registry.example/openkruise/kruise-manager:v1.9.0"}},
	}
	labels := func(v string) map[string]string { return map[string]string{"control-plane": v} }
	_, err = kube.AppsV1().Deployments(kruiseNS).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-controller-manager", Labels: labels("controller-manager")},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels("controller-manager")},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("controller-manager")}, Spec: podSpec},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.AppsV1().DaemonSets(kruiseNS).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-daemon", Labels: labels("daemon")},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels("daemon")},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("daemon")}, Spec: podSpec},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Services(kruiseNS).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-webhook-service"},
		Spec: corev1.ServiceSpec{Selector: labels("controller-manager"),
			Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(9876)}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		pods, err := kube.CoreV1().Pods(kruiseNS).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
		return err == nil && len(pods.Items) == 2, err
	})
}

// kruiseWebhooks installs OpenKruise's two webhook configurations as its chart does (its manager fills in the
// caBundle at start): only the kinds Flotilla takes over here, with OpenKruise's paths.
func kruiseWebhooks(t *testing.T, in *installer) {
	applyYAML(t, in, "helm", fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: kruise-mutating-webhook-configuration}
webhooks:
- name: mcloneset.kb.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig: {service: {namespace: %[1]s, name: kruise-webhook-service, path: /mutate-apps-kruise-io-v1alpha1-cloneset}}
  rules: [{apiGroups: [apps.kruise.io], apiVersions: [v1alpha1], operations: [CREATE, UPDATE], resources: [clonesets]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: kruise-validating-webhook-configuration}
webhooks:
- name: vsidecarset.kb.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig: {service: {namespace: %[1]s, name: kruise-webhook-service, path: /validate-apps-kruise-io-v1alpha1-sidecarset}}
  rules: [{apiGroups: [apps.kruise.io], apiVersions: [v1alpha1, v1beta1], operations: [CREATE, UPDATE], resources: [sidecarsets]}]
`, kruiseNS))
}

// kruiseOwnsTheConversion gives the DaemonSet and SidecarSet CRDs' conversion stanza to another field manager
// ("helm", as OpenKruise's chart installs them), pointing at kruise-webhook-service.
func kruiseOwnsTheConversion(t *testing.T, in *installer) {
	for _, crd := range []string{"daemonsets.apps.kruise.io", "sidecarsets.apps.kruise.io"} {
		applyYAML(t, in, "helm", fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s}
spec:
  conversion:
    strategy: Webhook
    webhook:
      clientConfig: {service: {namespace: %s, name: kruise-webhook-service, path: /convert}}
      conversionReviewVersions: [v1, v1beta1]
`, crd, kruiseNS))
	}
}

func applyYAML(t *testing.T, in *installer, manager, doc string) {
	t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", in.env.KubeconfigPath, "apply", "--server-side", "--force-conflicts",
		"--field-manager="+manager, "-f", "-")
	cmd.Stdin = strings.NewReader(doc)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "kubectl apply:\n%s\n%s", doc, out)
}

func removeOpenKruise(in *installer) {
	in.kubectl("delete", "--ignore-not-found", "mutatingwebhookconfiguration", "kruise-mutating-webhook-configuration")
	in.kubectl("delete", "--ignore-not-found", "validatingwebhookconfiguration", "kruise-validating-webhook-configuration")
	in.kubectl("delete", "--ignore-not-found", "--wait=false", "namespace", kruiseNS)
}

// workloads creates a CloneSet, an Advanced DaemonSet and a SidecarSet injecting the CloneSet's pods, and waits
// until all are ready.
func workloads(t *testing.T, in *installer, ns string) {
	ctx := context.Background()
	onKwok := corev1.PodSpec{
		NodeSelector: map[string]string{"type": "kwok"},
		Tolerations:  []corev1.Toleration{testenv.TestNodeToleration()},
		Containers:   []corev1.Container{{Name: "main", Image: "registry.example/agent:v1"}},
	}
	set := &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "migrate-" + ns},
		Spec: appsv1alpha1.SidecarSetSpec{
			Namespace:  ns,
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "log-agent", Image: "registry.example/log-agent:v1"}}},
		},
	}
	_, err := in.client.AppsV1alpha1().SidecarSets().Create(ctx, set, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = in.client.AppsV1alpha1().SidecarSets().Delete(context.Background(), set.Name, metav1.DeleteOptions{})
	})
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns, Labels: map[string]string{"app": "web"}}, Spec: onKwok}
	testenv.Eventually(t, time.Minute, func() (bool, error) { // the webhook's scope has widened to the new SidecarSet
		got, err := in.env.Kube.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && len(got.Spec.Containers) == 2, nil
	})
	_, err = in.client.AppsV1alpha1().CloneSets(ns).Create(ctx, cloneSet("web", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "agent"}
	ds := &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: onKwok},
		},
	}
	_, err = in.client.AppsV1alpha1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})
	require.NoError(t, err)
	waitCloneSet(t, in, ns, "web", "2 pods ready, sidecar injected", func(s appsv1alpha1.CloneSetStatus) bool {
		return s.ReadyReplicas == 2 && s.UpdatedReadyReplicas == 2
	})
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		d, err := in.client.AppsV1alpha1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		return err == nil && d.Status.DesiredNumberScheduled > 0 && d.Status.NumberReady == d.Status.DesiredNumberScheduled &&
			d.Status.UpdatedNumberScheduled == d.Status.DesiredNumberScheduled, err
	})
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		s, err := in.client.AppsV1alpha1().SidecarSets().Get(ctx, set.Name, metav1.GetOptions{})
		return err == nil && s.Status.MatchedPods == 2 && s.Status.UpdatedPods == 2 && s.Status.ObservedGeneration == s.Generation, err
	})
}

// snapshot is what must not change across the switch: every pod of the namespace (UID, resourceVersion, restart
// counts, revision label) and every ControllerRevision name of Flotilla's kinds (the namespace's and the SidecarSets'
// in kruise-system).
func snapshot(t *testing.T, in *installer, ns string) []string {
	ctx := context.Background()
	var out []string
	pods, err := in.env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range pods.Items {
		restarts := 0
		for _, c := range p.Status.ContainerStatuses {
			restarts += int(c.RestartCount)
		}
		out = append(out, fmt.Sprintf("pod %s uid=%s rv=%s restarts=%d revision=%s", p.Name, p.UID, p.ResourceVersion, restarts,
			p.Labels["controller-revision-hash"]))
	}
	for _, n := range []string{ns, kruiseNS} {
		revs, err := in.env.Kube.AppsV1().ControllerRevisions(n).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, r := range revs.Items {
			if owner := metav1.GetControllerOf(&r); owner != nil && owner.APIVersion == "apps/v1" {
				continue // the stand-in's kruise-daemon: the guide's stop step changes its template
			}
			out = append(out, fmt.Sprintf("revision %s/%s", n, r.Name))
		}
	}
	sort.Strings(out)
	return out
}

func assertKruiseStopped(t *testing.T, in *installer) {
	ctx := context.Background()
	pods, err := in.env.Kube.CoreV1().Pods(kruiseNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var left []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			left = append(left, p.Name)
		}
	}
	assert.Empty(t, left, "no pod of kruise-manager or kruise-daemon runs after the stop step")
}
