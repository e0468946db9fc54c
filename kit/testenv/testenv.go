// Package testenv gives end-to-end tests a real Kubernetes control plane: the local one of
// hack/cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok fake nodes,
// a hostPath PV provisioner).
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		env := testenv.Get(t)
//		ns := env.Namespace(t)
//		_, err := env.Kube.CoreV1().Pods(ns).Create(...)
//		testenv.Eventually(t, 30*time.Second, func() (bool, error) { ... })
//	}
//
// Cluster selection:
//   - FLOTILLA_KUBECONFIG=<path>: reuse that cluster (e.g. the one of `make cluster-up`,
//     <repo>/.cluster/kubeconfig). Fast; tests must then isolate themselves by namespace.
//   - otherwise: a private cluster is started with hack/cluster/up.sh in a temp CLUSTER_DIR on
//     free ports (binaries from bin/cluster, built with hack/cluster/build.sh when needed, which is
//     a no-op when they are up to date) and stopped when the tests end, even if the test binary
//     is killed (a watchdog process runs hack/cluster/down.sh when it disappears).
//
// Other environment variables: FLOTILLA_TEST_NODES (kwok nodes of a private cluster, default 3),
// FLOTILLA_KEEP_CLUSTER=1 (keep the private cluster's directory with its logs; it is always kept
// when a test failed), FLOTILLA_KEEP_NAMESPACES=1 (do not delete test namespaces),
// FLOTILLA_SKIP_CRDS=1 (do not install deploy/base/crds; for debugging the cluster itself).
// Environment variables of up.sh (AUDIT=1, KUBE_API_QPS, ...) are passed through.
//
// In both modes every CustomResourceDefinition under <repo>/deploy/base/crds is applied
// (server-side apply) and waited for until Established before the tests run; if any of them is
// rejected or never becomes Established, Main reports all such CRDs and exits 1. On a cluster of
// hack/cluster, a CRD converted by a webhook Service (DaemonSet, SidecarSet) is pointed at the
// cluster's own conversion endpoint (hack/cluster/local-convert.sh: namespace flotilla-local, the
// cluster CA), found in the cluster directory (the private one, or the shared kubeconfig's).
package testenv

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Env is a connection to the control plane the tests run against.
type Env struct {
	Config         *rest.Config // admin identity (system:masters)
	Kube           kubernetes.Interface
	KubeconfigPath string
	RepoRoot       string // directory containing go.work

	dynamic dynamic.Interface
	// ClusterDir is the CLUSTER_DIR of a private cluster (logs/, data/volumes/, ...); empty when
	// FLOTILLA_KUBECONFIG selected an existing cluster.
	ClusterDir string
}

var current *Env

// Env variables read by this package.
const (
	EnvKubeconfig     = "FLOTILLA_KUBECONFIG"
	EnvNodes          = "FLOTILLA_TEST_NODES"
	EnvKeepCluster    = "FLOTILLA_KEEP_CLUSTER"
	EnvKeepNamespaces = "FLOTILLA_KEEP_NAMESPACES"
	EnvSkipCRDs       = "FLOTILLA_SKIP_CRDS"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Main prepares the control plane, runs the tests and tears a private control plane down.
// It calls os.Exit and never returns.
//
// Under -short (make unit-test) it starts nothing: every test that calls Get is skipped, the others run.
func Main(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		short = true
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

// AfterRun registers f to run once the tests have run, while the control
// plane is still up (e.g. to write a report gathered by several tests). Call
// it from TestMain before Main. Not called under -short.
func AfterRun(f func()) { afterRun = append(afterRun, f) }

var afterRun []func()

// short is set by Main under -short: there is no control plane and Get skips the test.
var short bool

func run(m *testing.M) int {
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	env := &Env{RepoRoot: root}
	var private *privateCluster
	if kc := os.Getenv(EnvKubeconfig); kc != "" {
		env.KubeconfigPath = kc
	} else {
		private, err = startPrivate(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testenv: starting a private control plane:", err)
			return 1
		}
		env.KubeconfigPath = filepath.Join(private.dir, "kubeconfig")
		env.ClusterDir = private.dir
	}

	code := func() int {
		if err := env.connect(); err != nil {
			fmt.Fprintln(os.Stderr, "testenv:", err)
			return 1
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if os.Getenv(EnvSkipCRDs) == "1" {
			fmt.Fprintln(os.Stderr, "testenv: FLOTILLA_SKIP_CRDS=1: not installing deploy/base/crds")
		} else if err := env.installCRDs(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "testenv: installing CRDs:", err)
			return 1
		}
		current = env
		code := m.Run()
		for _, f := range afterRun {
			f()
		}
		return code
	}()

	if private != nil {
		private.stop(code != 0 || os.Getenv(EnvKeepCluster) == "1")
	}
	return code
}

// Get returns the Env prepared by Main; the test fails if Main was not used, and is skipped under -short.
func Get(t testing.TB) *Env {
	t.Helper()
	if short {
		t.Skip("testenv: integration test skipped under -short (it needs a control plane)")
	}
	if current == nil {
		t.Fatal("testenv: no environment; call testenv.Main(m) from TestMain")
	}
	return current
}

// Dynamic returns a dynamic client for the admin identity.
func (e *Env) Dynamic() dynamic.Interface { return e.dynamic }

// Namespace creates a fresh namespace named after the test, waits for its default
// ServiceAccount (pods are rejected until the controller-manager created it) and deletes it
// in t.Cleanup (unless FLOTILLA_KEEP_NAMESPACES=1).
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	ns, err := e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: namespacePrefix(t.Name()),
		Labels:       map[string]string{"flotilla.dev/e2e": "true"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testenv: creating namespace: %v", err)
	}
	name := ns.Name
	t.Cleanup(func() {
		if os.Getenv(EnvKeepNamespaces) == "1" {
			t.Logf("testenv: keeping namespace %s", name)
			return
		}
		err := e.Kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("testenv: deleting namespace %s: %v", name, err)
		}
	})
	Eventually(t, time.Minute, func() (bool, error) {
		_, err := e.Kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return name
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

func namespacePrefix(testName string) string {
	s := nonDNS.ReplaceAllString(strings.ToLower(testName), "-")
	s = strings.Trim(s, "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	if s == "" {
		s = "test"
	}
	return "e2e-" + s + "-"
}

// Eventually polls cond every 100 ms until it returns true, and fails the test (t.Fatalf) if
// that does not happen within timeout. An error returned by cond does not stop the polling
// (API calls fail transiently, e.g. on conflicts); the last one is reported on timeout. To give
// up at once, call t.Fatal inside cond (it runs on the test goroutine).
func Eventually(t testing.TB, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	var lastErr error
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok && err == nil {
			return
		}
		if err != nil {
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				t.Fatalf("condition not met within %v; last error: %v", timeout, lastErr)
			}
			t.Fatalf("condition not met within %v", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *Env) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.KubeconfigPath)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", e.KubeconfigPath, err)
	}
	// Tests create objects in bursts; client-go's default 5 QPS would dominate their run time.
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "flotilla-e2e"
	e.Config = cfg
	if e.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if e.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	// Fail early with a clear message when the cluster is not reachable.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := e.Kube.Discovery().ServerVersion()
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("cluster of %s not reachable", e.KubeconfigPath)
	}
	return nil
}

// installCRDs server-side-applies every CustomResourceDefinition found in YAML files under
// deploy/base/crds and waits until all are Established.
func (e *Env) installCRDs(ctx context.Context) error {
	dir := filepath.Join(e.RepoRoot, "deploy", "base", "crds")
	var crds []*unstructured.Unstructured
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && path == dir {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if err == io.EOF {
					return nil
				}
				return fmt.Errorf("%s: %w", path, err)
			}
			if obj.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, obj)
			}
		}
	})
	if err != nil || len(crds) == 0 {
		return err
	}
	local := e.localConversion()
	for _, crd := range crds {
		local.point(crd)
	}
	client := e.dynamic.Resource(crdGVR)
	// Apply all of them and report every failure at once (one broken CRD must not hide others).
	var errs []error
	var applied []string
	for _, crd := range crds {
		data, err := crd.MarshalJSON()
		if err != nil {
			return err
		}
		force := true
		if _, err := client.Patch(ctx, crd.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: "flotilla-testenv", Force: &force}); err != nil {
			errs = append(errs, fmt.Errorf("applying CRD %s: %w", crd.GetName(), err))
			continue
		}
		applied = append(applied, crd.GetName())
	}
	for _, name := range applied {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			got, err := client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("CRD %s not Established: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// localConversion is the CRD conversion endpoint of a hack/cluster control plane (hack/cluster/local-convert.sh):
// the namespace of its Services and the CA of its certificate. Zero when the cluster has none running (a cluster
// not started by hack/cluster: the CRDs are applied as shipped).
type localConversion struct {
	namespace string
	caBundle  []byte
}

// localConversion finds the endpoint in the cluster directory: the private cluster's, or the one holding the shared
// cluster's kubeconfig (<repo>/.cluster/kubeconfig).
func (e *Env) localConversion() localConversion {
	dir := e.ClusterDir
	if dir == "" {
		dir = filepath.Dir(e.KubeconfigPath)
	}
	addr, err := os.ReadFile(filepath.Join(dir, "run", "local-convert.addr")) // "<ip>:<port>/<namespace>"
	if err != nil {
		return localConversion{}
	}
	ca, err := os.ReadFile(filepath.Join(dir, "pki", "local-convert", "ca.crt"))
	if err != nil {
		return localConversion{}
	}
	_, ns, ok := strings.Cut(strings.TrimSpace(string(addr)), "/")
	if !ok || ns == "" {
		return localConversion{}
	}
	return localConversion{namespace: ns, caBundle: ca}
}

// point makes a CRD's conversion webhook Service (deploy/base/crds names flotilla-system, where installed
// controllers serve it) the local endpoint's, with its CA: on the local control plane the controllers run as
// processes or not at all, and v1alpha1 clients (controllers, tests) need the conversion all the same.
func (l localConversion) point(crd *unstructured.Unstructured) {
	if l.namespace == "" {
		return
	}
	if _, found, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service"); !found {
		return
	}
	_ = unstructured.SetNestedField(crd.Object, l.namespace, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
	_ = unstructured.SetNestedField(crd.Object, base64.StdEncoding.EncodeToString(l.caBundle), "spec", "conversion", "webhook", "clientConfig", "caBundle")
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work above %s", dir)
		}
	}
}

// privateCluster is a control plane started by this test binary.
type privateCluster struct {
	root, dir string
	env       []string
}

func startPrivate(root string) (*privateCluster, error) {
	hack := filepath.Join(root, "hack", "cluster")
	// build.sh is a sub-second no-op when bin/cluster is up to date (it compares a stamp);
	// the first cold build takes ~5 minutes.
	build := exec.Command(filepath.Join(hack, "build.sh"))
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("hack/cluster/build.sh: %w", err)
	}

	nodes := os.Getenv(EnvNodes)
	if nodes == "" {
		nodes = "3"
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // free ports can be taken between probe and use
		dir, err := os.MkdirTemp("", "flotilla-testenv-")
		if err != nil {
			return nil, err
		}
		ports, err := freePorts(9)
		if err != nil {
			return nil, err
		}
		pc := &privateCluster{root: root, dir: dir, env: append(os.Environ(),
			"CLUSTER_DIR="+dir,
			"APISERVER_PORT="+strconv.Itoa(ports[0]),
			"ETCD_CLIENT_PORT="+strconv.Itoa(ports[1]),
			"ETCD_PEER_PORT="+strconv.Itoa(ports[2]),
			"KCM_PORT="+strconv.Itoa(ports[3]),
			"SCHEDULER_PORT="+strconv.Itoa(ports[4]),
			"KWOK_PORT="+strconv.Itoa(ports[5]),
			// Used only with REAL_NODES=N in the environment (real nodes: hack/cluster/README.md). Real node i
			// also takes KUBELET_PORT+2i+1; up.sh says so if it is taken.
			"REGISTRY_PORT="+strconv.Itoa(ports[6]),
			"KUBELET_PORT="+strconv.Itoa(ports[7]),
			// The CRD conversion endpoint (hack/cluster/local-convert.sh) listens on this host's address.
			"LOCAL_CONVERT_PORT="+strconv.Itoa(ports[8]),
			"NODES="+nodes,
		)}
		pc.startWatchdog()
		up := exec.Command(filepath.Join(hack, "up.sh"))
		up.Env = pc.env
		up.Stdout, up.Stderr = os.Stderr, os.Stderr
		if lastErr = up.Run(); lastErr == nil {
			return pc, nil
		}
		pc.stop(true)
	}
	return nil, fmt.Errorf("hack/cluster/up.sh: %w", lastErr)
}

// startWatchdog starts a detached shell that stops the cluster (and removes its directory
// unless told to keep it) once this test process is gone, however it ended (go test -timeout,
// SIGINT, SIGKILL, panic).
func (pc *privateCluster) startWatchdog() {
	script := `while kill -0 "$1" 2>/dev/null; do sleep 1; done
"$2/hack/cluster/down.sh" >/dev/null 2>&1
[ -e "$CLUSTER_DIR/.keep" ] || rm -rf "$CLUSTER_DIR"`
	cmd := exec.Command("setsid", "bash", "-c", script, "watchdog", strconv.Itoa(os.Getpid()), pc.root)
	cmd.Env = pc.env
	if err := cmd.Start(); err == nil {
		go func() { _ = cmd.Wait() }()
	}
}

// stop stops the cluster; with keep the directory (logs!) is left for inspection.
func (pc *privateCluster) stop(keep bool) {
	if keep {
		_ = os.WriteFile(filepath.Join(pc.dir, ".keep"), nil, 0o644)
	}
	down := exec.Command(filepath.Join(pc.root, "hack", "cluster", "down.sh"))
	down.Env = pc.env
	if out, err := down.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: down.sh: %v\n%s", err, out)
	}
	if keep {
		fmt.Fprintf(os.Stderr, "testenv: private cluster directory kept: %s (logs in %s/logs)\n", pc.dir, pc.dir)
		return
	}
	_ = os.RemoveAll(pc.dir)
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Consistently fails the test (t.Fatalf) if cond returns an error at any check during d (checks every 200 ms).
// It is for negative assertions ("nothing else happens"); positive ones use Eventually.
func Consistently(t testing.TB, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			t.Fatalf("condition broken within %v: %v", d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
