package fleet

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const systemNamespace = "flotilla-system"

// fleet is one test's view of the controllers: the identities from deploy/overlays/local, and a namespace of
// its own for the leader-election Leases, so tests never compete with controllers started by `make run`.
type fleet struct {
	env *testenv.Env
	ns  string
	bin string
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
	applyOnce sync.Once
	applyErr  error
	rendered  []*unstructured.Unstructured
)

func newFleet(t *testing.T, env *testenv.Env) *fleet {
	t.Helper()
	buildOnce.Do(func() { binDir, buildErr = buildControllers(env.RepoRoot) })
	require.NoError(t, buildErr)
	applyOnce.Do(func() { rendered, applyErr = applyLocalOverlay(env) })
	require.NoError(t, applyErr)

	f := &fleet{env: env, ns: env.Namespace(t), bin: binDir}
	// Grant each controller its leader-election Role (as deploy/ defines it) in this test's namespace.
	for _, obj := range rendered {
		if obj.GetKind() != "Role" && obj.GetKind() != "RoleBinding" {
			continue
		}
		if !strings.HasSuffix(obj.GetName(), ":leader-election") {
			continue
		}
		c := obj.DeepCopy()
		c.SetNamespace(f.ns)
		require.NoError(t, serverSideApply(context.Background(), env, c))
	}
	return f
}

// buildControllers compiles the seven binaries from the working tree once per test binary.
func buildControllers(root string) (string, error) {
	dir, err := os.MkdirTemp("", "flotilla-fleet-bin-")
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", dir + "/"}
	for _, c := range controllers {
		args = append(args, fmt.Sprintf("github.com/flotilla-dev/flotilla/controllers/%s/cmd/%s-controller", c, c))
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return dir, nil
}

// applyLocalOverlay renders deploy/overlays/local with kubectl's kustomize and server-side applies it: the
// namespace, the CRDs and every controller's ServiceAccount and RBAC.
func applyLocalOverlay(env *testenv.Env) ([]*unstructured.Unstructured, error) {
	cmd := exec.Command("kubectl", "kustomize", filepath.Join(env.RepoRoot, "deploy/overlays/local"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize: %w: %s", err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("decode rendered overlay: %w", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	ctx := context.Background()
	for _, obj := range objs {
		if err := serverSideApply(ctx, env, obj); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

func serverSideApply(ctx context.Context, env *testenv.Env, obj *unstructured.Unstructured) error {
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
	ri := env.Dynamic().Resource(mapping.Resource)
	var target interface {
		Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*unstructured.Unstructured, error)
	} = ri
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		target = ri.Namespace(obj.GetNamespace())
	}
	_, err = target.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: "flotilla-e2e", Force: ptr.To(true)})
	if err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// configAs returns a client config that authenticates with a fresh token of the controller's ServiceAccount.
func (f *fleet) configAs(t *testing.T, controller string) *rest.Config {
	t.Helper()
	tr, err := f.env.Kube.CoreV1().ServiceAccounts(systemNamespace).CreateToken(context.Background(), controller+"-controller",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.AnonymousClientConfig(f.env.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

func (f *fleet) clientAs(t *testing.T, controller string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(f.configAs(t, controller))
}

// kubeconfigFor writes a kubeconfig holding the controller's token, as hack/run-local.sh does.
func (f *fleet) kubeconfigFor(t *testing.T, controller string) string {
	t.Helper()
	cfg := f.configAs(t, controller)
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
	path := filepath.Join(t.TempDir(), controller+".kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(kc), 0o600))
	return path
}

func (f *fleet) leaseHolder(controller string) (string, error) {
	lease, err := f.env.Kube.CoordinationV1().Leases(f.ns).Get(context.Background(), controller+"-controller", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// process is one running controller binary.
type process struct {
	cmd        *exec.Cmd
	logPath    string
	healthURL  string
	metricsURL string
	done       chan struct{}
}

// start runs the controller under its own ServiceAccount with its Lease in the test's namespace.
func (f *fleet) start(t *testing.T, controller string, extraArgs ...string) *process {
	t.Helper()
	ports := freePorts(t, 2)
	p := &process{
		logPath:    filepath.Join(t.TempDir(), controller+".log"),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		healthURL:  fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		done:       make(chan struct{}),
	}
	args := append([]string{
		"--kubeconfig=" + f.kubeconfigFor(t, controller),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		"--leader-elect=true",
		"--leader-elect-resource-namespace=" + f.ns,
		// Only the test's namespace: a binary watching the whole cluster would reconcile objects of tests
		// running in parallel (cronjob-controller already has reconcilers).
		"--namespace=" + f.ns,
	}, extraArgs...)
	logFile, err := os.Create(p.logPath)
	require.NoError(t, err)
	p.cmd = exec.Command(filepath.Join(f.bin, controller+"-controller"), args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("%s log:\n%s", controller, p.log())
		}
	})
	return p
}

// stop sends SIGTERM (what the kubelet sends) and waits for the process to exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("controller did not exit within 30s of SIGTERM")
	}
}

func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *process) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// get returns the status code of a health endpoint, or 0 when it does not answer.
func (p *process) get(path string) int {
	resp, err := http.Get(p.healthURL + path)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func (p *process) body(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// consistently fails the test if cond stops holding at any check during d (checks every 200 ms).
func consistently(t *testing.T, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		require.NoError(t, cond())
		time.Sleep(200 * time.Millisecond)
	}
}
