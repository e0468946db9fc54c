// Package install installs charts/flotilla into the local control plane with Helm's Go library, as `helm install`
// does: two features (cloneset and pub) whose controllers run as pods on the real node from images of this
// checkout, then an upgrade turning pub off, then `helm uninstall`.
//
// The controllers it installs watch every namespace, so, like test/e2e/install, it runs alone after every other
// package: `make test` runs it with FLOTILLA_E2E_INSTALL=1 (REAL_NODES=1); without that variable it skips.
package install

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/charts/tools/helmrender"
)

const (
	envRun          = "FLOTILLA_E2E_INSTALL"
	envKubeconfig   = "FLOTILLA_KUBECONFIG"
	releaseName     = "flotilla-chart-e2e"
	releaseNS       = "default"
	systemNamespace = "flotilla-system"
	realNodeLabel   = "flotilla.dev/real-node"
	registryAnnot   = "flotilla.dev/registry"
)

type env struct {
	t          *testing.T
	root       string
	chart      string
	kubeconfig string
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	mapper     *restmapper.DeferredDiscoveryRESTMapper
	cfg        *action.Configuration
	node, reg  string
	images     map[string]string // binary -> <registry>/flotilla/<binary>@sha256:...
}

func setup(t *testing.T) *env {
	if v := os.Getenv(envRun); v == "" || v == "0" {
		t.Skipf("runs alone, after every other package: the controllers it installs watch every namespace (make test sets %s=1)", envRun)
	}
	kc := os.Getenv(envKubeconfig)
	if kc == "" {
		t.Skipf("%s is not set: no control plane to install into", envKubeconfig)
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	must(t, err)
	e := &env{t: t, root: strings.TrimSpace(string(out)), kubeconfig: kc}
	e.chart = filepath.Join(e.root, "charts", "flotilla")
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	must(t, err)
	e.kube = kubernetes.NewForConfigOrDie(rc)
	e.dyn = dynamic.NewForConfigOrDie(rc)
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kc
	dc, err := flags.ToDiscoveryClient()
	must(t, err)
	e.mapper = restmapper.NewDeferredDiscoveryRESTMapper(dc)
	e.cfg = action.NewConfiguration()
	must(t, e.cfg.Init(flags, releaseNS, "secret"))
	nodes, err := e.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: realNodeLabel + "=true"})
	must(t, err)
	for _, n := range nodes.Items {
		if reg := n.Annotations[registryAnnot]; reg != "" {
			e.node, e.reg = n.Name, reg
		}
	}
	if e.node == "" {
		t.Fatal("the controllers run on a real node: start the cluster with REAL_NODES=1")
	}
	e.buildImages()
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// buildImages is README's `make images` for one platform, pushed to the real node's registry.
func (e *env) buildImages() {
	start := time.Now()
	e.run("make", "-C", e.root, "images", "IMAGE_PLATFORMS=linux/amd64", "IMAGE_TAG=e2e", "REGISTRY="+e.reg)
	e.t.Logf("make images (linux/amd64, pushed to %s): %.1f s", e.reg, time.Since(start).Seconds())
	f, err := os.Open(filepath.Join(e.root, "bin", "images", "digests.txt"))
	must(e.t, err)
	defer f.Close()
	e.images = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 {
			e.images[fields[0]] = fields[1]
		}
	}
	must(e.t, sc.Err())
}

func (e *env) run(name string, args ...string) {
	e.t.Helper()
	cmd := exec.Command(name, args...)
	// GOWORK="": make builds the images in the repository's workspace (this module is built with GOWORK=off).
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig, "GOWORK=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// values enables the features, pins every image to the digest just pushed, and places the controllers on the real
// node (the kwok nodes run no container). The namespace and the CRDs are installed by the overlays, as the cluster's
// other users expect them (crds.managed and installation.createNamespace off).
func (e *env) values(features ...string) map[string]any {
	extra := map[string]any{
		"manager": map[string]any{
			"nodeSelector": map[string]any{"kubernetes.io/hostname": e.node},
			"tolerations":  []any{map[string]any{"key": realNodeLabel, "operator": "Exists", "effect": "NoSchedule"}},
		},
	}
	for _, sec := range []string{"cloneset", "statefulset", "daemonset", "sidecarset", "pub", "probe", "cronjob", "deletionprotection", "resourcedistribution", "containerrecreate", "imagepulljob", "uniteddeployment", "launchpriority", "persistentpodstate", "daemon"} {
		bin := sec + "-controller"
		if sec == "daemon" {
			bin = "probe-agent"
		}
		repo, digest, ok := strings.Cut(e.images[bin], "@")
		if !ok {
			e.t.Fatalf("no digest of %s in bin/images/digests.txt", bin)
		}
		extra[sec] = map[string]any{"image": map[string]any{"repository": repo, "tag": "", "digest": digest}}
	}
	return helmrender.Only(features, extra)
}

// objects renders the chart for the features: what the release must hold on the cluster.
func (e *env) objects(features ...string) []map[string]any {
	objs, err := helmrender.Render(e.chart, e.values(features...))
	must(e.t, err)
	return objs
}

func (e *env) resource(obj map[string]any) dynamic.ResourceInterface {
	u := unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	must(e.t, err)
	if m.Scope.Name() == "namespace" {
		return e.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	return e.dyn.Resource(m.Resource)
}

// uids maps the objects that exist by helmrender.Key to their UID.
func (e *env) uids(objs []map[string]any) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		got, err := e.resource(o).Get(context.Background(), (&unstructured.Unstructured{Object: o}).GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		must(e.t, err)
		if got.GetDeletionTimestamp() == nil {
			out[helmrender.Key(o)] = string(got.GetUID())
		}
	}
	return out
}

// owned lists the objects that exist and belong to the release (Helm's meta.helm.sh/release-name): other packages'
// runs of deploy/overlays/local may create objects of the same names meanwhile, and those are not the release's.
func (e *env) owned(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		got, err := e.resource(o).Get(context.Background(), (&unstructured.Unstructured{Object: o}).GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		must(e.t, err)
		if got.GetDeletionTimestamp() == nil && got.GetAnnotations()["meta.helm.sh/release-name"] == releaseName {
			out = append(out, helmrender.Key(o))
		}
	}
	return out
}

// clean deletes what exists of the objects (e.g. RBAC and Leases that other packages' runs of deploy/overlays/local
// applied), which Helm would refuse to take over, and puts them back when the test ends (after the uninstall): a
// test process that applied the local overlay once keeps its RBAC.
func (e *env) clean(objs []map[string]any) {
	ctx := context.Background()
	var saved []*unstructured.Unstructured
	for _, o := range objs {
		ri, name := e.resource(o), (&unstructured.Unstructured{Object: o}).GetName()
		live, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		must(e.t, err)
		saved = append(saved, live)
		if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			e.t.Fatalf("delete leftover %s: %v", helmrender.Key(o), err)
		}
	}
	e.t.Cleanup(func() {
		for _, live := range saved {
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			for k, v := range live.Object {
				if k != "metadata" && k != "status" {
					obj.Object[k] = v
				}
			}
			obj.SetName(live.GetName())
			obj.SetNamespace(live.GetNamespace())
			obj.SetLabels(live.GetLabels())
			obj.SetAnnotations(live.GetAnnotations())
			data, err := obj.MarshalJSON()
			if err == nil {
				_, err = e.resource(live.Object).Patch(ctx, live.GetName(), "application/apply-patch+yaml", data,
					metav1.PatchOptions{FieldManager: "flotilla-e2e", Force: ptrTrue()})
			}
			if err != nil {
				e.t.Errorf("put back %s/%s %s: %v", live.GetNamespace(), live.GetName(), live.GetKind(), err)
			}
		}
		e.t.Logf("put back %d objects that were there before the test", len(saved))
	})
	e.eventually(time.Minute, "leftovers gone", func() (bool, string) {
		left := e.uids(objs)
		return len(left) == 0, fmt.Sprint(left)
	})
}

func (e *env) eventually(timeout time.Duration, what string, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not within %v; last seen: %s", what, timeout, seen)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitAvailable waits until the Deployment's replicas are updated and available on the real node.
func (e *env) waitAvailable(name string) {
	e.t.Helper()
	e.eventually(2*time.Minute, "Deployment "+name+" available on "+e.node, func() (bool, string) {
		d, err := e.kube.AppsV1().Deployments(systemNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		pods, err := e.kube.CoreV1().Pods(systemNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		if err != nil {
			return false, err.Error()
		}
		onNode := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == e.node && p.DeletionTimestamp == nil {
				onNode++
			}
		}
		return d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want && onNode >= int(want),
			fmt.Sprintf("replicas %d, updated %d, available %d, pods on the node %d", want, d.Status.UpdatedReplicas, d.Status.AvailableReplicas, onNode)
	})
}

var cloneSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}

// TestInstallUpgradeUninstall: `helm install` with cloneset and pub, the controllers running on the real node and
// working; `helm upgrade` with pub off removes exactly pub's objects; `helm uninstall` removes the rest and its
// webhook configurations, and keeps the CRDs and the namespace.
func TestInstallUpgradeUninstall(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.run("kubectl", "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(e.root, "deploy/overlays/namespace"))
	e.run("kubectl", "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(e.root, "deploy/overlays/crds"))
	e.run("kubectl", "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")

	both := e.objects("cloneset", "pub")
	cloneset, pub := e.objects("cloneset"), e.objects("pub")
	e.clean(both)
	ch, err := loader.Load(e.chart)
	must(t, err)

	// A release left by an interrupted run goes first; this run's goes whatever happens.
	uninstall := func() error {
		u := action.NewUninstall(e.cfg)
		u.IgnoreNotFound = true
		u.WaitStrategy = kube.HookOnlyStrategy
		u.Timeout = 2 * time.Minute
		_, err := u.Run(releaseName)
		return err
	}
	must(t, uninstall())
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			if err := uninstall(); err != nil {
				t.Errorf("helm uninstall %s: %v", releaseName, err)
			}
		}
	})

	start := time.Now()
	install := action.NewInstall(e.cfg)
	install.ReleaseName, install.Namespace = releaseName, releaseNS
	install.WaitStrategy = kube.HookOnlyStrategy
	install.Timeout = 2 * time.Minute
	_, err = install.Run(ch, e.values("cloneset", "pub"))
	must(t, err)
	applied := time.Since(start)
	e.waitAvailable("cloneset-controller")
	e.waitAvailable("pub-controller")
	t.Logf("helm install (cloneset, pub): applied in %.1f s, controllers available %.1f s after the start", applied.Seconds(), time.Since(start).Seconds())
	if got := e.uids(both); len(got) != len(both) {
		t.Fatalf("after install %d of the %d rendered objects exist: %v", len(got), len(both), got)
	}

	// Working controllers: pub-controller injected its CA into its webhook configuration; cloneset-controller, the
	// Lease holder, reconciles a CloneSet (0 replicas: no pod needs a node).
	e.eventually(time.Minute, "caBundle of flotilla-pub", func() (bool, string) {
		w, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "flotilla-pub", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(w.Webhooks[0].ClientConfig.CABundle) > 0, "no caBundle"
	})
	ns := fmt.Sprintf("chart-e2e-%d", time.Now().UnixNano()%100000)
	_, err = e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() { _ = e.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	cs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{"replicas": int64(0),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "registry.example/web:v1"}}}}},
	}}
	_, err = e.dyn.Resource(cloneSets).Namespace(ns).Create(ctx, cs, metav1.CreateOptions{})
	must(t, err)
	e.eventually(time.Minute, "CloneSet web observed by cloneset-controller", func() (bool, string) {
		got, err := e.dyn.Resource(cloneSets).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		g, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
		return g == got.GetGeneration(), fmt.Sprintf("status %v", got.Object["status"])
	})

	// Upgrade with pub off: exactly pub's objects go; cloneset's stay, the same objects (UIDs).
	before := e.uids(cloneset)
	start = time.Now()
	upgrade := action.NewUpgrade(e.cfg)
	upgrade.Namespace = releaseNS
	upgrade.WaitStrategy = kube.HookOnlyStrategy
	upgrade.Timeout = 2 * time.Minute
	_, err = upgrade.Run(releaseName, ch, e.values("cloneset"))
	must(t, err)
	e.eventually(time.Minute, "pub's objects gone", func() (bool, string) {
		left := e.owned(pub)
		return len(left) == 0, fmt.Sprint(left)
	})
	t.Logf("helm upgrade (pub off): pub's %d objects gone %.1f s after the start", len(pub), time.Since(start).Seconds())
	if after := e.uids(cloneset); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("cloneset's objects changed in the upgrade:\nbefore %v\nafter  %v", before, after)
	}
	e.waitAvailable("cloneset-controller")

	// pub back on, then uninstall: everything of the release goes, its webhook configuration first (no failurePolicy
	// Fail left pointing at a Service without endpoints); CRDs, namespace and the CloneSet stay.
	upgrade = action.NewUpgrade(e.cfg)
	upgrade.Namespace = releaseNS
	upgrade.WaitStrategy = kube.HookOnlyStrategy
	upgrade.Timeout = 2 * time.Minute
	_, err = upgrade.Run(releaseName, ch, e.values("cloneset", "pub"))
	must(t, err)
	e.waitAvailable("pub-controller")
	if got := e.owned(both); len(got) != len(both) {
		t.Fatalf("after pub is back %d of the %d rendered objects are the release's: %v", len(got), len(both), got)
	}
	must(t, uninstall())
	uninstalled = true
	e.eventually(time.Minute, "the release's objects gone", func() (bool, string) {
		left := e.owned(both)
		return len(left) == 0, fmt.Sprint(left)
	})
	if w, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "flotilla-pub", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ValidatingWebhookConfiguration flotilla-pub after uninstall: %v (annotations %v)", err, w.GetAnnotations())
	}
	if _, err := e.kube.CoreV1().Namespaces().Get(ctx, systemNamespace, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace %s: %v", systemNamespace, err)
	}
	if _, err := e.dyn.Resource(cloneSets).Namespace(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the CloneSet (and its CRD) stays: %v", err)
	}
}

// TestServerAcceptsRenderedObjects sends every object the chart renders (every feature, CRDs and namespaces; in the
// self-managed and secret certificate modes, and with the placement and host-network values) to the API server as a
// dry run (create, or replace what exists): schemas, defaulting and admission accept them, and nothing on the cluster changes, so
// it needs no gate beyond a control plane.
func TestServerAcceptsRenderedObjects(t *testing.T) {
	kc := os.Getenv(envKubeconfig)
	if kc == "" {
		t.Skipf("%s is not set: no control plane", envKubeconfig)
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	must(t, err)
	root := strings.TrimSpace(string(out))
	dir := filepath.Join(root, "charts", "flotilla")
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	must(t, err)
	rc.QPS, rc.Burst = 100, 200
	warnings := &warningLog{}
	rc.WarningHandler = warnings
	e := &env{t: t, dyn: dynamic.NewForConfigOrDie(rc), kubeconfig: kc}
	// Namespaced objects need their namespace, even in a dry run: README's first step (what every install does;
	// the namespaces are kept for the cluster's other users).
	e.run("kubectl", "apply", "--server-side", "-k", filepath.Join(root, "deploy/overlays/namespace"))
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kc
	dc, err := flags.ToDiscoveryClient()
	must(t, err)
	e.mapper = restmapper.NewDeferredDiscoveryRESTMapper(dc)
	ports := map[string]any{"manager": map[string]any{"hostNetwork": true, "nodeSelector": map[string]any{"pool": "a"},
		"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Exists"}}}, "imagePullSecrets": []any{map[string]any{"name": "regcred"}}}
	for i, s := range []string{"cloneset", "statefulset", "daemonset", "sidecarset", "pub", "probe", "cronjob", "deletionprotection", "resourcedistribution", "containerrecreate", "uniteddeployment", "launchpriority", "persistentpodstate", "imagepulljob"} {
		ports[s] = map[string]any{"metrics": map[string]any{"port": 18080 + 10*i}, "healthProbe": map[string]any{"port": 18081 + 10*i},
			"webhook": map[string]any{"port": 18082 + 10*i}}
	}
	for name, vals := range map[string]map[string]any{
		"defaults":            nil,
		"secret certificates": {"certificates": map[string]any{"mode": "secret"}, "webhookConfiguration": map[string]any{"excludedNamespaces": []any{"a", "b"}}},
		"host network":        ports,
	} {
		t.Run(name, func(t *testing.T) {
			e.t = t
			objs, err := helmrender.Render(dir, vals)
			must(t, err)
			// The Pod Security level the chart's namespaces enforce: the live namespaces are the overlay's, so the
			// API server warns against those; a warning counts when the rendered namespace enforces the same level.
			enforce := map[string]string{}
			for _, o := range objs {
				u := &unstructured.Unstructured{Object: o}
				if u.GetKind() == "Namespace" {
					enforce[u.GetName()] = u.GetLabels()["pod-security.kubernetes.io/enforce"]
				}
			}
			for _, o := range objs {
				u := &unstructured.Unstructured{Object: o}
				warnings.take()
				// Create, or replace what exists (e.g. the local overlay's URL webhook configurations): the object
				// as the chart has it is validated, not a merge with another manager's fields.
				ri, dry := e.resource(o), []string{metav1.DryRunAll}
				live, err := ri.Get(context.Background(), u.GetName(), metav1.GetOptions{})
				switch {
				case apierrors.IsNotFound(err):
					_, err = ri.Create(context.Background(), u.DeepCopy(), metav1.CreateOptions{DryRun: dry, FieldManager: "chart-dry-run"})
				case err == nil:
					c := u.DeepCopy()
					c.SetResourceVersion(live.GetResourceVersion())
					_, err = ri.Update(context.Background(), c, metav1.UpdateOptions{DryRun: dry, FieldManager: "chart-dry-run"})
				}
				if err != nil {
					t.Errorf("%s: %v", helmrender.Key(o), err)
				}
				for _, w := range warnings.take() {
					if level := enforce[u.GetNamespace()]; level != "" && strings.Contains(w, fmt.Sprintf("would violate PodSecurity %q", level+":latest")) {
						t.Errorf("%s: pods would be refused in namespace %s (enforce %s): %s", helmrender.Key(o), u.GetNamespace(), level, w)
					}
				}
			}
			t.Logf("%d objects accepted (dry run)", len(objs))
		})
	}
}

func ptrTrue() *bool { b := true; return &b }

// warningLog keeps the API server's warnings (rest.WarningHandler) until taken.
type warningLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}
