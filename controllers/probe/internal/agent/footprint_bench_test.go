package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// BenchmarkAgentFootprint measures one probe-agent process (the built
// binary, not this test process) probing 110 pods × 2 probes (tcpSocket and
// httpGet, periodSeconds 1) on a kwok node with loopback pod IPs, where the
// test serves every probe: after all results are Succeeded, over a steady
// window it reports the agent's peak RSS (VmHWM), RSS and anonymous RSS at
// the end of the window, CPU per second and status writes per minute. One run whatever b.N:
//
//	FLOTILLA_KUBECONFIG=... go test -run '^$' -bench AgentFootprint -benchtime 1x ./internal/agent/
func BenchmarkAgentFootprint(b *testing.B) {
	measureAgentFootprint(b, footprint{pods: 110, probes: 2, period: 1})
}

// BenchmarkNodeAgentFootprint is issue 28's figure: the agent with its node
// features on (every gate it accepts, as deploy/overlays/all ships it:
// KruiseDaemon, hence the ContainerRecreateRequest worker with its informer,
// ImagePullJobGate, hence the NodeImage puller, and
// InPlaceUpdateEnvFromMetadata, connected to the real node's containerd
// through --cri-socket) on a node with 100 pods and 300
// probes (tcpSocket, httpGet, and a second httpGet on another path; exec
// probes cannot run on a kwok pod). "At rest" is the probes' default period
// (10 s) with no request to serve; the 1 s period is the same node under
// load; features-off is the 10 s node with the probes alone. When the agent
// gains a node feature gate, add it to nodeGates. Run it on a cluster without
// `make run`'s controllers (`make stop` first): it does not pass beside a
// running probe-controller.
func BenchmarkNodeAgentFootprint(b *testing.B) {
	socket := realNodeCRISocket(b)
	args := []string{"--feature-gates=" + nodeGates, "--cri-socket=" + socket}
	for _, period := range []int32{10, 1} {
		b.Run(fmt.Sprintf("period=%ds", period), func(b *testing.B) {
			measureAgentFootprint(b, footprint{pods: 100, probes: 3, period: period, args: args})
		})
	}
	// The same node with the node features off (probes only, no CRI): what they cost.
	b.Run("period=10s/features-off", func(b *testing.B) {
		measureAgentFootprint(b, footprint{pods: 100, probes: 3, period: 10})
	})
}

// nodeGates turns on every node feature probe-agent has (agentapp.Gates; that
// package imports this one, so the list is written out).
const nodeGates = "KruiseDaemon=true,InPlaceUpdateEnvFromMetadata=true,ImagePullJobGate=true"

// realNodeCRISocket is a real node's containerd socket of the local cluster
// (hack/cluster: <cluster dir>/data/nodes/<i>/containerd.sock): the agent
// refuses to start when its --cri-socket does not answer.
func realNodeCRISocket(b *testing.B) string {
	env := testenv.Get(b)
	dir := env.ClusterDir
	if dir == "" {
		dir = filepath.Dir(env.KubeconfigPath)
	}
	socks, _ := filepath.Glob(filepath.Join(dir, "data", "nodes", "*", "containerd.sock"))
	if len(socks) == 0 {
		b.Skipf("no real node's containerd socket under %s (start the cluster with REAL_NODES=1)", dir)
	}
	return "unix://" + socks[0]
}

// footprint is one measurement: pods × probes per pod at periodSeconds
// period, the agent started with args beside its usual flags.
type footprint struct {
	pods, probes int
	period       int32
	args         []string
}

func measureAgentFootprint(b *testing.B, f footprint) {
	pods := f.pods
	const window = 60 * time.Second
	env := testenv.Get(b)
	ctx := context.Background()
	client, err := versioned.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	ns := env.Namespace(b)
	node := loopbackKwokNode(b, env, ns)

	bin := filepath.Join(b.TempDir(), "probe-agent")
	build := exec.Command("go", "build", "-tags", "grpcnotrace", "-o", bin, "github.com/flotilla-dev/flotilla/controllers/probe/cmd/probe-agent") // as make build and the image
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build probe-agent: %v\n%s", err, out)
	}

	var specs []appsv1alpha1.PodProbe
	for i := 0; i < pods; i++ {
		p, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("game-%03d", i), Namespace: ns},
			Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
				Containers: []corev1.Container{{Name: "main", Image: "game:1"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		specs = append(specs, appsv1alpha1.PodProbe{Name: p.Name, Namespace: ns, UID: string(p.UID)})
	}
	testenv.Eventually(b, 3*time.Minute, func() (bool, error) {
		list, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ips := map[string]string{}
		for _, p := range list.Items {
			if p.Status.PodIP != "" && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil {
				ips[p.Name] = p.Status.PodIP
			}
		}
		for i := range specs {
			specs[i].IP = ips[specs[i].Name]
		}
		return len(ips) == pods, nil
	})
	// One TCP and one HTTP server per pod IP, on fixed ports.
	const tcpPort, httpPort = 17001, 17002
	for _, s := range specs {
		tl, err := net.Listen("tcp", net.JoinHostPort(s.IP, strconv.Itoa(tcpPort)))
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				c, err := tl.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
		b.Cleanup(func() { _ = tl.Close() })
		hl, err := net.Listen("tcp", net.JoinHostPort(s.IP, strconv.Itoa(httpPort)))
		if err != nil {
			b.Fatal(err)
		}
		srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
		go func() { _ = srv.Serve(hl) }()
		b.Cleanup(func() { _ = srv.Close() })
	}
	probe := func(h corev1.ProbeHandler) appsv1alpha1.ContainerProbeSpec {
		return appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: h, PeriodSeconds: f.period, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}}
	}
	kinds := []appsv1alpha1.ContainerProbe{
		{Name: "ppm#tcp", ContainerName: "main", Probe: probe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(tcpPort)}})},
		{Name: "ppm#http", ContainerName: "main", Probe: probe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt(httpPort)}})},
		{Name: "ppm#ready", ContainerName: "main", Probe: probe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt(httpPort)}})},
	}
	for i := range specs {
		specs[i].Probes = kinds[:f.probes]
	}
	npps := client.AppsV1alpha1().NodePodProbes()
	if _, err := npps.Create(ctx, &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: appsv1alpha1.NodePodProbeSpec{PodProbes: specs}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = npps.Delete(context.Background(), node, metav1.DeleteOptions{}) })

	agentCtx, stop := context.WithCancel(ctx)
	cmd := exec.CommandContext(agentCtx, bin, append([]string{"--kubeconfig=" + env.KubeconfigPath, "--node-name=" + node,
		"--metrics-bind-address=0", "--health-probe-bind-address=0"}, f.args...)...)
	cmd.Stderr, cmd.Stdout = nil, nil
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stop(); _ = cmd.Wait() })

	testenv.Eventually(b, 2*time.Minute, func() (bool, error) {
		npp, err := npps.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for _, ps := range npp.Status.PodProbeStatuses {
			for _, st := range ps.ProbeStates {
				if st.State == appsv1alpha1.ProbeSucceeded {
					n++
				}
			}
		}
		return n == f.probes*pods, nil
	})
	w, err := npps.Watch(ctx, metav1.ListOptions{FieldSelector: NodeNameFieldSelector(node)})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	cpu0 := procCPU(b, cmd.Process.Pid)
	start := time.Now()
	writes := 0
	deadline := time.After(window)
loop:
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Modified {
				writes++
			}
		case <-deadline:
			break loop
		}
	}
	elapsed := time.Since(start)
	cpu := procCPU(b, cmd.Process.Pid) - cpu0
	if !procRunning(cmd.Process.Pid) {
		b.Fatal("probe-agent exited during the window")
	}
	b.ReportMetric(float64(procStatusKB(b, cmd.Process.Pid, "VmHWM:"))/(1<<10), "peakRSS-MiB")
	b.ReportMetric(float64(procStatusKB(b, cmd.Process.Pid, "VmRSS:"))/(1<<10), "endRSS-MiB")
	// RSS counts the executable's pages it touched (RssFile, shared with every
	// process of the same binary and reclaimable); RssAnon is the agent's own
	// memory (heap, stacks).
	b.ReportMetric(float64(procStatusKB(b, cmd.Process.Pid, "RssAnon:"))/(1<<10), "endAnonRSS-MiB")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds()*1000, "CPU-ms/s")
	b.ReportMetric(float64(writes)/elapsed.Minutes(), "writes/min")
}

// procCPU is the user+system CPU time of process pid.
func procCPU(tb testing.TB, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// procStatusKB is a "<field> <n> kB" line of /proc/<pid>/status (VmHWM:
// peak resident set size, VmRSS: resident set size now), in KiB.
func procStatusKB(tb testing.TB, pid int, field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, field) {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// procRunning reports process pid alive (not a zombie).
func procRunning(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(raw[strings.LastIndexByte(string(raw), ')'):]), ") Z")
}
