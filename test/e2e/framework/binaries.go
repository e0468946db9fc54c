// Package framework runs Flotilla's controller binaries in end-to-end tests the way an operator runs them:
// compiled from the working tree and started as processes under the ServiceAccounts and RBAC that deploy/
// installs, so a test also proves that RBAC is enough.
package framework

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// SystemNamespace is where deploy/ puts the controllers' ServiceAccounts.
const SystemNamespace = "flotilla-system"

var (
	buildMu sync.Mutex
	built   = map[string]string{} // controller name → binary path, once per test process

	overlayOnce sync.Once
	overlay     []*unstructured.Unstructured
	overlayErr  error
)

// Binary compiles <controller>-controller (e.g. "cloneset") from the working tree once per test process and
// returns its path under bin/e2e/. Test binaries of several packages may build at the same time: each writes a
// private file and renames it into place.
//
// tags are Go build tags compiling test-only code into the binary (e.g. cronjob's "e2eclock", which adds
// --clock-offset); such a binary gets a name of its own, so the release build is never replaced by it.
func Binary(t testing.TB, env *testenv.Env, controller string, tags ...string) string {
	t.Helper()
	name := strings.Join(append([]string{controller + "-controller"}, tags...), "-")
	pkg := fmt.Sprintf("github.com/flotilla-dev/flotilla/controllers/%s/cmd/%s-controller", controller, controller)
	return build(t, env, name, pkg, tags)
}

// CommandBinary compiles another command of a controller module, controllers/<module>/cmd/<command> (e.g. probe's
// node agent, "probe", "probe-agent"), once per test process and returns its path under bin/e2e/.
func CommandBinary(t testing.TB, env *testenv.Env, module, command string) string {
	t.Helper()
	return build(t, env, command, fmt.Sprintf("github.com/flotilla-dev/flotilla/controllers/%s/cmd/%s", module, command), nil)
}

func build(t testing.TB, env *testenv.Env, name, pkg string, tags []string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if path, ok := built[name]; ok {
		return path
	}
	dir := filepath.Join(env.RepoRoot, "bin", "e2e")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, name)
	tmp := fmt.Sprintf("%s.%d", path, os.Getpid())
	// grpcnotrace as `make build` and the images (Makefile, build): what the tests run is what ships.
	args := []string{"build", "-o", tmp, "-tags", strings.Join(append([]string{"grpcnotrace"}, tags...), ",")}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = env.RepoRoot
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", pkg, out)
	require.NoError(t, os.Rename(tmp, path))
	built[name] = path
	return path
}

// InstallLocalOverlay renders deploy/overlays/local with kubectl's kustomize and server-side applies it once per
// test process: the system namespace, the CRDs and every controller's ServiceAccount and RBAC. It returns the
// rendered objects (read-only).
func InstallLocalOverlay(t testing.TB, env *testenv.Env) []*unstructured.Unstructured {
	t.Helper()
	overlayOnce.Do(func() { overlay, overlayErr = installLocalOverlay(env) })
	require.NoError(t, overlayErr)
	return overlay
}

func installLocalOverlay(env *testenv.Env) ([]*unstructured.Unstructured, error) {
	objs, err := RenderOverlay(env.RepoRoot, "local")
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		if err := Apply(context.Background(), env, obj); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// Apply server-side applies obj with the admin identity.
func Apply(ctx context.Context, env *testenv.Env, obj *unstructured.Unstructured) error {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.Kube.Discovery()))
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("map %s: %w", gvk, err)
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: "flotilla-e2e", Force: ptr.To(true)}
	ri := env.Dynamic().Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		_, err = ri.Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
	} else {
		_, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
	}
	if err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// ServiceAccountConfig returns a client config authenticating with a fresh token of the controller's
// ServiceAccount (<controller>-controller in SystemNamespace).
func ServiceAccountConfig(t testing.TB, env *testenv.Env, controller string) *rest.Config {
	t.Helper()
	return serviceAccountConfig(t, env, controller+"-controller")
}

func serviceAccountConfig(t testing.TB, env *testenv.Env, serviceAccount string) *rest.Config {
	t.Helper()
	return tokenConfig(t, env, SystemNamespace, serviceAccount, nil)
}

// tokenConfig returns a client config with a fresh token of ServiceAccount ns/serviceAccount, bound to bound if set.
func tokenConfig(t testing.TB, env *testenv.Env, ns, serviceAccount string, bound *authenticationv1.BoundObjectReference) *rest.Config {
	t.Helper()
	tr, err := env.Kube.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), BoundObjectRef: bound}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// ServiceAccountKubeconfig writes a kubeconfig with a token of the controller's ServiceAccount, as
// hack/run-local.sh does for `make run`.
func ServiceAccountKubeconfig(t testing.TB, env *testenv.Env, controller string) string {
	t.Helper()
	return ServiceAccountKubeconfigOf(t, env, controller+"-controller")
}

// ServiceAccountKubeconfigOf writes a kubeconfig with a token of ServiceAccount serviceAccount in SystemNamespace.
func ServiceAccountKubeconfigOf(t testing.TB, env *testenv.Env, serviceAccount string) string {
	t.Helper()
	return writeKubeconfig(t, serviceAccountConfig(t, env, serviceAccount), serviceAccount)
}

// AgentNamespace is where deploy/ puts the node agent (Pod Security "privileged").
const AgentNamespace = "flotilla-node"

// AgentKubeconfig writes a kubeconfig with a token of probe-agent's ServiceAccount bound to node, as
// hack/run-local.sh does: the token names the node, which the admission policy flotilla-probe-agent-own-node
// requires for the agent's NodePodProbe status writes.
func AgentKubeconfig(t testing.TB, env *testenv.Env, node string) string {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	cfg := tokenConfig(t, env, AgentNamespace, "probe-agent", &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: n.UID})
	return writeKubeconfig(t, cfg, "probe-agent")
}

func writeKubeconfig(t testing.TB, cfg *rest.Config, name string) string {
	t.Helper()
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		var err error
		ca, err = os.ReadFile(cfg.CAFile)
		require.NoError(t, err)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: controller, user: {token: %q}}]
contexts: [{name: local, context: {cluster: local, user: controller}}]
current-context: local
`, cfg.Host, base64.StdEncoding.EncodeToString(ca), cfg.BearerToken)
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(kc), 0o600))
	return path
}

// StartScoped builds the controller's binary, installs deploy/overlays/local,
// and runs the binary as the controller's ServiceAccount (so its RBAC is
// what is tested), without leader election, restricted to namespace ns, with
// extra flags; it returns once the process is ready (failing the test if it
// exits first).
func StartScoped(t testing.TB, env *testenv.Env, controller, ns string, extra ...string) *Process {
	t.Helper()
	return StartScopedBinary(t, env, Binary(t, env, controller), controller, ns, extra...)
}

// StartScopedBinary is StartScoped with a binary of the caller's (e.g. Binary with build tags).
func StartScopedBinary(t testing.TB, env *testenv.Env, bin, controller, ns string, extra ...string) *Process {
	t.Helper()
	InstallLocalOverlay(t, env)
	args := append([]string{
		"--kubeconfig=" + ServiceAccountKubeconfig(t, env, controller),
		"--leader-elect=false",
		"--namespace=" + ns,
		"--log-format=console",
	}, extra...)
	args = append(args, ConversionArgs(controller)...)
	p := Start(t, bin, args...)
	testenv.Eventually(t, time.Minute, func() (bool, error) { return p.Status("/readyz") == 200 || !p.Running(), nil })
	if !p.Running() {
		t.Fatalf("%s-controller exited:\n%s", controller, p.Log())
	}
	return p
}

// ConversionArgs are the flags a test gives a controller that serves its CRD's conversion (daemonset,
// sidecarset): on the local control plane the CRDs' stanza is hack/cluster/local-convert.sh's (kit/testenv points
// it there), which every other test needs, so the process serves conversion but never re-points the stanza at
// itself. daemonset-controller's server serves only conversion, which nothing calls there: it listens on a free
// port of 127.0.0.1 (sidecarset's callers choose its port: the local overlay's webhooks call it by URL).
func ConversionArgs(controller string) []string {
	switch controller {
	case "daemonset":
		return []string{"--webhook-external-crd-conversion", "--webhook-host=127.0.0.1", "--webhook-port=0"}
	case "sidecarset":
		return []string{"--webhook-external-crd-conversion"}
	}
	return nil
}

// RenderOverlay renders deploy/overlays/<name> of the checkout at root with kubectl's kustomize and returns its
// objects in order.
func RenderOverlay(root, name string) ([]*unstructured.Unstructured, error) {
	cmd := exec.Command("kubectl", "kustomize", filepath.Join(root, "deploy/overlays", name))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize deploy/overlays/%s: %w: %s", name, err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode deploy/overlays/%s: %w", name, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}
