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
// window it reports the agent's peak RSS (VmHWM), CPU per second and status
// writes per minute. One run whatever b.N:
//
//	FLOTILLA_KUBECONFIG=... go test -run '^$' -bench AgentFootprint -benchtime 1x ./internal/agent/
func BenchmarkAgentFootprint(b *testing.B) {
	const pods, window = 110, 60 * time.Second
	env := testenv.Get(b)
	ctx := context.Background()
	client, err := versioned.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	ns := env.Namespace(b)
	node := loopbackKwokNode(b, env, ns)

	bin := filepath.Join(b.TempDir(), "probe-agent")
	build := exec.Command("go", "build", "-o", bin, "github.com/flotilla-dev/flotilla/controllers/probe/cmd/probe-agent")
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
		return appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: h, PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}}
	}
	for i := range specs {
		specs[i].Probes = []appsv1alpha1.ContainerProbe{
			{Name: "ppm#tcp", ContainerName: "main", Probe: probe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(tcpPort)}})},
			{Name: "ppm#http", ContainerName: "main", Probe: probe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt(httpPort)}})},
		}
	}
	npps := client.AppsV1alpha1().NodePodProbes()
	if _, err := npps.Create(ctx, &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: appsv1alpha1.NodePodProbeSpec{PodProbes: specs}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = npps.Delete(context.Background(), node, metav1.DeleteOptions{}) })

	agentCtx, stop := context.WithCancel(ctx)
	cmd := exec.CommandContext(agentCtx, bin, "--kubeconfig="+env.KubeconfigPath, "--node-name="+node,
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
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
		return n == 2*pods, nil
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
	b.ReportMetric(float64(procHWM(b, cmd.Process.Pid))/(1<<20), "peakRSS-MiB")
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

// procHWM is the peak resident set size of process pid, in bytes.
func procHWM(tb testing.TB, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	tb.Fatal("no VmHWM")
	return 0
}
