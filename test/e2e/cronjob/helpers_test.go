package cronjob

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
	"syscall"
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

const (
	systemNamespace = "flotilla-system"
	serviceAccount  = "cronjob-controller"
)

// buildBinary compiles cronjob-controller from the working tree into a temporary directory.
func buildBinary(t *testing.T, root string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cronjob-controller")
	cmd := exec.Command("go", "build", "-o", out, "github.com/flotilla-dev/flotilla/controllers/cronjob/cmd/cronjob-controller")
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", b)
	return out
}

// installIdentity applies, from the rendered deploy/overlays/local, the system namespace and what deploy/ gives
// cronjob-controller (ServiceAccount, ClusterRole, bindings), so the binary runs with exactly that RBAC.
func installIdentity(t *testing.T, env *testenv.Env) {
	t.Helper()
	cmd := exec.Command("kubectl", "kustomize", filepath.Join(env.RepoRoot, "deploy/overlays/local"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl kustomize: %s", stderr.String())
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.Kube.Discovery()))
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, "decode rendered overlay")
		}
		keep := u.GetKind() == "Namespace" || u.GetLabels()["app.kubernetes.io/name"] == serviceAccount
		if len(u.Object) == 0 || !keep {
			continue
		}
		apply(t, env, mapper, u)
	}
}

func apply(t *testing.T, env *testenv.Env, mapper meta.RESTMapper, obj *unstructured.Unstructured) {
	t.Helper()
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	require.NoError(t, err)
	data, err := obj.MarshalJSON()
	require.NoError(t, err)
	ri := env.Dynamic().Resource(mapping.Resource)
	opts := metav1.PatchOptions{FieldManager: "flotilla-e2e", Force: ptr.To(true)}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		_, err = ri.Namespace(obj.GetNamespace()).Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data, opts)
	} else {
		_, err = ri.Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data, opts)
	}
	require.NoError(t, err, "apply %s %s", gvk.Kind, obj.GetName())
}

// kubeconfigForServiceAccount writes a kubeconfig holding a fresh token of the controller's ServiceAccount.
func kubeconfigForServiceAccount(t *testing.T, env *testenv.Env) string {
	t.Helper()
	tr, err := env.Kube.CoreV1().ServiceAccounts(systemNamespace).CreateToken(context.Background(), serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.CopyConfig(env.Config)
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		ca, err = os.ReadFile(cfg.CAFile)
		require.NoError(t, err)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: controller, user: {token: %q}}]
contexts: [{name: local, context: {cluster: local, user: controller}}]
current-context: local
`, cfg.Host, base64.StdEncoding.EncodeToString(ca), tr.Status.Token)
	path := filepath.Join(t.TempDir(), "cronjob-controller.kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(kc), 0o600))
	return path
}

// process is the running binary; its combined output goes to a file printed when the test fails.
type process struct {
	cmd     *exec.Cmd
	logPath string
	health  string
	done    chan struct{}
}

func startBinary(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	port := freePort(t)
	p := &process{logPath: filepath.Join(t.TempDir(), "cronjob-controller.log"),
		health: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
	args = append([]string{"--metrics-bind-address=0", fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", port)}, args...)
	logFile, err := os.Create(p.logPath)
	require.NoError(t, err)
	p.cmd = exec.Command(bin, args...)
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
			b, _ := os.ReadFile(p.logPath)
			t.Logf("cronjob-controller log:\n%s", b)
		}
	})
	return p
}

func (p *process) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("cronjob-controller did not exit within 30s of SIGTERM")
	}
}

func (p *process) ready() bool {
	resp, err := http.Get(p.health + "/readyz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
