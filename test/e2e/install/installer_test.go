package install

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

const (
	envRun          = "FLOTILLA_E2E_INSTALL"
	systemNamespace = "flotilla-system"
	// agentNamespace holds the node agent (Pod Security "privileged"; flotilla-system is "restricted").
	agentNamespace = "flotilla-node"
	registryAnnot  = "flotilla.dev/registry"
	criSocketAnnot = "flotilla.dev/cri-socket" // where the real node's containerd listens (hack/cluster/node-up.sh)
	realNodeLabel  = "flotilla.dev/real-node"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installer installs and removes overlays pinned to images of this checkout, on the real node.
type installer struct {
	t        *testing.T // the test or subtest that asserts; see on
	root     *testing.T // the whole test: what it installs is removed when it ends
	env      *testenv.Env
	client   versioned.Interface
	node     string
	registry string
	socket   string            // the real node's CRI socket on the host
	images   map[string]string // binary -> <registry>/flotilla/<binary>@sha256:...
	dir      string            // bin/e2e-install: the pinning kustomizations
}

func newInstaller(t *testing.T) *installer {
	t.Helper()
	if v := os.Getenv(envRun); v == "" || v == "0" {
		t.Skipf("runs alone, after every other package: the controllers it installs watch every namespace (make test sets %s=1)", envRun)
	}
	env := testenv.Get(t)
	in := &installer{t: t, root: t, env: env, client: versioned.NewForConfigOrDie(env.Config), dir: filepath.Join(env.RepoRoot, "bin", "e2e-install")}
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: realNodeLabel + "=true"})
	require.NoError(t, err)
	for _, n := range nodes.Items {
		if reg := n.Annotations[registryAnnot]; reg != "" {
			in.node, in.registry, in.socket = n.Name, reg, n.Annotations[criSocketAnnot]
		}
	}
	require.NotEmpty(t, in.node, "the controllers run on a real node: start the cluster with REAL_NODES=1")
	in.buildImages()
	in.cleanSlate()
	return in
}

// on returns the installer asserting in t (a subtest), its installs still removed when the whole test ends.
func (in *installer) on(t *testing.T) *installer {
	c := *in
	c.t = t
	return &c
}

// buildImages is README's `make images` for one platform, pushed to the real node's registry.
func (in *installer) buildImages() {
	t := in.t
	start := time.Now()
	in.run("make", "-C", in.env.RepoRoot, "images", "IMAGE_PLATFORMS=linux/amd64", "IMAGE_TAG=e2e", "REGISTRY="+in.registry)
	t.Logf("make images (linux/amd64, pushed to %s): %.1f s", in.registry, time.Since(start).Seconds())
	f, err := os.Open(filepath.Join(in.env.RepoRoot, "bin", "images", "digests.txt"))
	require.NoError(t, err)
	defer f.Close()
	in.images = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 {
			in.images[fields[0]] = fields[1]
		}
	}
	require.NoError(t, sc.Err())
	require.Contains(t, in.images, "cloneset-controller")
}

// cleanSlate removes what other packages' runs of deploy/overlays/local left (RBAC, URL webhook configurations)
// but the namespace and the CRDs, so that "nothing of another feature is present" means what it says.
func (in *installer) cleanSlate() {
	objs, err := framework.RenderOverlay(in.env.RepoRoot, "local")
	require.NoError(in.t, err)
	for _, o := range objs {
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		args := []string{"delete", "--ignore-not-found", "--wait=false", strings.ToLower(o.GetKind()), o.GetName()}
		if ns := o.GetNamespace(); ns != "" {
			args = append(args, "-n", ns)
		}
		in.kubectl(args...)
	}
}

// shared installs the namespace and the CRDs (README: once, before any feature).
func (in *installer) shared() {
	in.kubectl("apply", "--server-side", "--force-conflicts", "-k", filepath.Join(in.env.RepoRoot, "deploy/overlays/namespace"))
	in.kubectl("apply", "--server-side", "--force-conflicts", "-k", filepath.Join(in.env.RepoRoot, "deploy/overlays/crds"))
	in.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
}

// pinned writes bin/e2e-install/<feature>/kustomization.yaml: the feature's overlay with its images pinned to the
// digests just pushed (README's `images:` entry) and its pods placed on the real node (the kwok nodes run no
// container).
func (in *installer) pinned(feature string) string {
	t := in.t
	dir := filepath.Join(in.dir, feature)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../../deploy/overlays/%s\nimages:\n", feature)
	for bin, ref := range in.images {
		name, digest, ok := strings.Cut(ref, "@")
		require.True(t, ok, "digest of %s: %s", bin, ref)
		fmt.Fprintf(&b, "- {name: flotilla/%s, newName: %s, digest: %q}\n", bin, name, digest)
	}
	b.WriteString("patches:\n")
	for _, kind := range []string{"Deployment", "DaemonSet"} {
		fmt.Fprintf(&b, `- target: {kind: %s}
  patch: |-
    apiVersion: apps/v1
    kind: %s
    metadata: {name: any}
    spec:
      template:
        spec:
          nodeSelector: {kubernetes.io/hostname: %s}
          tolerations: [{key: %s, operator: Exists, effect: NoSchedule}]
`, kind, kind, in.node, realNodeLabel)
	}
	// The node agent mounts the node's CRI socket: the real node's containerd listens in its own directory, not at
	// containerd's default path (an install choice, like OpenKruise's chart value for the daemon's socket).
	fmt.Fprintf(&b, `- target: {kind: DaemonSet, name: probe-agent}
  patch: |-
    - {op: replace, path: /spec/template/spec/volumes/0/hostPath/path, value: %q}
`, in.socket)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o644))
	return dir
}

// install applies the feature's pinned overlay and waits until each of its Deployments is available on the real
// node; it logs the time from the apply to the last controller pod Ready.
func (in *installer) install(feature string) {
	start := time.Now()
	in.kubectl("apply", "--server-side", "--force-conflicts", "-k", in.pinned(feature))
	root := *in
	root.t = in.root
	in.root.Cleanup(func() { root.kubectl("delete", "--ignore-not-found", "-k", root.pinned(feature)) })
	// Waited for in turn: each time is when the wait saw that one Ready, an upper bound of its own time.
	var times []string
	for _, d := range in.deployments(feature) {
		in.waitAvailable(d)
		times = append(times, fmt.Sprintf("%s %.1f s", d, time.Since(start).Seconds()))
	}
	if in.hasAgent(feature) {
		in.waitAgent()
		times = append(times, fmt.Sprintf("probe-agent %.1f s", time.Since(start).Seconds()))
	}
	in.t.Logf("overlay %s: controller pods Ready %.1f s after the apply (%s)", feature, time.Since(start).Seconds(), strings.Join(times, ", "))
}

// uninstall is README's `kubectl delete -k` of the feature's overlay (pinned as it was installed).
func (in *installer) uninstall(feature string) {
	in.kubectl("delete", "--wait=true", "-k", in.pinned(feature))
	for _, d := range in.deployments(feature) {
		testenv.Eventually(in.t, time.Minute, func() (bool, error) {
			_, err := in.env.Kube.AppsV1().Deployments(systemNamespace).Get(context.Background(), d, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
}

// assertAbsent checks that no Deployment, DaemonSet or webhook configuration of the features is on the cluster.
func (in *installer) assertAbsent(features ...string) {
	ctx := context.Background()
	for _, f := range features {
		for _, d := range in.deployments(f) {
			_, err := in.env.Kube.AppsV1().Deployments(systemNamespace).Get(ctx, d, metav1.GetOptions{})
			assert.True(in.t, apierrors.IsNotFound(err), "Deployment %s of %s is present", d, f)
		}
		if in.hasAgent(f) {
			_, err := in.env.Kube.AppsV1().DaemonSets(agentNamespace).Get(ctx, "probe-agent", metav1.GetOptions{})
			assert.True(in.t, apierrors.IsNotFound(err), "DaemonSet probe-agent of %s is present", f)
		}
		_, err := in.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "flotilla-"+f, metav1.GetOptions{})
		assert.True(in.t, apierrors.IsNotFound(err), "validating webhook configuration of %s is present", f)
		_, err = in.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "flotilla-"+f, metav1.GetOptions{})
		assert.True(in.t, apierrors.IsNotFound(err), "mutating webhook configuration of %s is present", f)
	}
}

func (in *installer) deployments(feature string) []string { return in.rendered(feature, "Deployment") }

// rendered names the objects of kind the feature's overlay holds.
func (in *installer) rendered(feature, kind string) []string {
	objs, err := framework.RenderOverlay(in.env.RepoRoot, feature)
	require.NoError(in.t, err)
	var names []string
	for _, o := range objs {
		if o.GetKind() == kind {
			names = append(names, o.GetName())
		}
	}
	return names
}

// waitAvailable waits until every replica of the Deployment is updated and available, its pods Ready on the real
// node.
func (in *installer) waitAvailable(name string) {
	ctx := context.Background()
	var seen string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		d, err := in.env.Kube.AppsV1().Deployments(systemNamespace).Get(ctx, name, metav1.GetOptions{})
		require.NoError(in.t, err)
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		ready := 0
		pods, err := in.env.Kube.CoreV1().Pods(systemNamespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		require.NoError(in.t, err)
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Spec.NodeName == in.node && testenv.PodReady(&p) {
				ready++
			}
		}
		seen = fmt.Sprintf("replicas %d, updated %d, available %d, pods Ready on %s %d", want, d.Status.UpdatedReplicas,
			d.Status.AvailableReplicas, in.node, ready)
		if d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want && ready >= int(want) {
			return
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("Deployment %s/%s not available: %s\n%s", systemNamespace, name, seen, in.podReport(pods.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// podReport says why pods are not ready: their phase, conditions and container states.
func (in *installer) podReport(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "pod %s on %q: %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " [%s ready=%v restarts=%d %+v]", c.Name, c.Ready, c.RestartCount, c.State)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (in *installer) kubectl(args ...string) {
	in.t.Helper()
	in.run("kubectl", append([]string{"--kubeconfig", in.env.KubeconfigPath}, args...)...)
}

func (in *installer) run(name string, args ...string) {
	in.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+in.env.KubeconfigPath)
	out, err := cmd.CombinedOutput()
	require.NoError(in.t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
}

// failover deletes the pod holding the Deployment's Lease (name) and checks that another replica takes the Lease
// within the lease duration while answer (a webhook call) succeeds every time it is tried meanwhile.
func (in *installer) failover(name string, answer func() error) {
	t, ctx := in.t, context.Background()
	leases := in.env.Kube.CoordinationV1().Leases(systemNamespace)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, l.Spec.HolderIdentity)
	holder := *l.Spec.HolderIdentity
	leaderPod, _, _ := strings.Cut(holder, "_") // kit/app: <hostname, the pod's name>_<uuid>
	duration := time.Duration(ptrValue(l.Spec.LeaseDurationSeconds)) * time.Second
	require.NoError(t, answer(), "the webhook answers before the failover")

	start := time.Now()
	require.NoError(t, in.env.Kube.CoreV1().Pods(systemNamespace).Delete(ctx, leaderPod, metav1.DeleteOptions{}))
	calls, failures := 0, []string{}
	var newHolder string
	var took time.Duration
	// Calls go on until the old pod is gone, so they span its whole termination (endpoint removal, draining), not
	// only the change of leader.
	for gone := false; !(gone && newHolder != "") && time.Since(start) < duration+30*time.Second; {
		calls++
		if err := answer(); err != nil {
			failures = append(failures, fmt.Sprintf("%.1fs: %v", time.Since(start).Seconds(), err))
		}
		if l, err := leases.Get(ctx, name, metav1.GetOptions{}); newHolder == "" && err == nil && l.Spec.HolderIdentity != nil &&
			*l.Spec.HolderIdentity != holder && *l.Spec.HolderIdentity != "" {
			newHolder, took = *l.Spec.HolderIdentity, time.Since(start)
		}
		_, err := in.env.Kube.CoreV1().Pods(systemNamespace).Get(ctx, leaderPod, metav1.GetOptions{})
		gone = apierrors.IsNotFound(err)
		time.Sleep(100 * time.Millisecond)
	}
	require.NotEmpty(t, newHolder, "no replica took the Lease %s from %s", name, holder)
	t.Logf("Lease %s: %s → %s %.1f s after the leader pod was deleted (lease duration %s); %d webhook calls until the "+
		"old pod was gone (%.1f s), %d failed", name, holder, newHolder, took.Seconds(), duration, calls, time.Since(start).Seconds(), len(failures))
	assert.LessOrEqual(t, took, duration, "the Lease changes hands within the lease duration")
	assert.Empty(t, failures, "the webhook keeps answering through the failover")
	in.waitAvailable(name)
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func (in *installer) hasAgent(feature string) bool {
	objs, err := framework.RenderOverlay(in.env.RepoRoot, feature)
	require.NoError(in.t, err)
	for _, o := range objs {
		if o.GetKind() == "DaemonSet" && o.GetName() == "probe-agent" {
			return true
		}
	}
	return false
}

// waitAgent waits until the node agent's pod on the real node is Ready (the DaemonSet is pinned there).
func (in *installer) waitAgent() {
	ctx := context.Background()
	var pods []corev1.Pod
	var seen string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := in.env.Kube.CoreV1().Pods(agentNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=probe-agent"})
		require.NoError(in.t, err)
		pods = list.Items
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Spec.NodeName == in.node && testenv.PodReady(&p) {
				return
			}
		}
		seen = in.podReport(pods)
		if time.Now().After(deadline) {
			in.t.Fatalf("probe-agent not Ready on %s:\n%s", in.node, seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
