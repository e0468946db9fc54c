package agent

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// testRuntime is a CRI runtime service answering Version and ExecSync only:
// the exit code of every exec is what the test sets.
type testRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	exitCode atomic.Int32
	mu       sync.Mutex
	execs    map[string][]string // container ID -> last command
}

func (r *testRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "flotilla-test", RuntimeVersion: "0.1.0", RuntimeApiVersion: "v1"}, nil
}

func (r *testRuntime) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	r.mu.Lock()
	r.execs[req.ContainerId] = req.Cmd
	r.mu.Unlock()
	code := r.exitCode.Load()
	resp := &runtimeapi.ExecSyncResponse{ExitCode: code}
	if code != 0 {
		resp.Stderr = []byte("players connected: 3")
	}
	return resp, nil
}

// startTestRuntime serves a testRuntime on a unix socket and returns its
// endpoint.
func startTestRuntime(t *testing.T) (*testRuntime, string) {
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	rt := &testRuntime{execs: map[string][]string{}}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, rt)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return rt, "unix://" + sock
}

// TestAgentExecProbeThroughCRI: an exec probe of a pod kwok runs goes to the
// CRI runtime's ExecSync (a runtime the test serves) with the container ID of
// the pod's status: exit 0 is Succeeded, a non-zero exit Failed with the
// command's stderr as message, and back.
func TestAgentExecProbeThroughCRI(t *testing.T) {
	l := lab.New(t, time.Minute)
	ctx, client, ns := context.Background(), l.Client, l.NS
	node := l.Env.KwokNodes(t, ns, 1, nil)[0]
	rt, endpoint := startTestRuntime(t)

	pod := runningGamePod(l, node)
	containerID := runtimeContainerID(pod.Status.ContainerStatuses[0].ContainerID)

	npps := client.AppsV1alpha1().NodePodProbes()
	probeNode(l, node, pod, appsv1alpha1.ContainerProbe{Name: "ppm#idle", ContainerName: "main",
		Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/check-idle.sh"}}},
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}}})

	exec, err := NewCRIExecer(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	startAgent(l, node, func(d *Deps) { d.Exec = exec })

	wait := func(what string, state appsv1alpha1.ProbeState, msg string) {
		t.Helper()
		t.Logf("waiting: %s", what)
		testenv.Eventually(t, 30*time.Second, func() (bool, error) {
			npp, err := npps.Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, ps := range npp.Status.PodProbeStatuses {
				for _, st := range ps.ProbeStates {
					if ps.UID == string(pod.UID) && st.Name == "ppm#idle" {
						return st.State == state && st.Message == msg, nil
					}
				}
			}
			return false, nil
		})
	}
	wait("exit 0 succeeds", ok, "")
	rt.mu.Lock()
	cmd := rt.execs[containerID]
	rt.mu.Unlock()
	if len(cmd) != 1 || cmd[0] != "/check-idle.sh" {
		t.Fatalf("ExecSync for container %s got %v (all: %v)", containerID, cmd, rt.execs)
	}
	rt.exitCode.Store(1)
	wait("a non-zero exit fails with stderr", fail, "players connected: 3")
	rt.exitCode.Store(0)
	wait("and recovers", ok, "")
}
