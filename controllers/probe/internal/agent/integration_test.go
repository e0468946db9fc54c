package agent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/nodeclient"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// Unit tests run without a control plane under -short; testenv skips the integration tests then.
func TestMain(m *testing.M) { testenv.Main(m) }

// startAgent runs the real agent in-process for node, over nodeclient's
// clients and informers scoped the way probe-agent scopes them; set adjusts
// its Deps (an exec runner, a recorder) before it is built.
func startAgent(l *lab.Lab, node string, set func(*Deps)) (*Agent, func()) {
	l.T.Helper()
	nc, err := nodeclient.New(l.Env.Config)
	if err != nil {
		l.T.Fatal(err)
	}
	informers := nc.Informers(0)
	d := Deps{NodeName: node, NodePodProbes: nc.NodePodProbes(),
		PodInformer: informers.Pods(NodePodFieldSelector(node)), NodePodProbeInformer: informers.NodePodProbes(NodeNameFieldSelector(node)),
		Clock: clock.RealClock{}, BatchDelay: 100 * time.Millisecond}
	if set != nil {
		set(&d)
	}
	a, err := New(d)
	if err != nil {
		l.T.Fatal(err)
	}
	return a, testenv.StartController(l.T, a, 1, informers)
}

// toggleServer is a TCP listener and an HTTP server on 127.0.0.1 whose
// health the test switches.
type toggleServer struct {
	ip                string
	httpPort, tcpPort int
	healthy, hang     atomic.Bool
	tcp               net.Listener
}

func newToggleServer(t *testing.T, ip string) *toggleServer {
	s := &toggleServer{ip: ip}
	s.healthy.Store(true)
	hl, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.hang.Load() {
			<-r.Context().Done() // answer only when the prober gave up
			return
		}
		if !s.healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go func() { _ = srv.Serve(hl) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.httpPort = hl.Addr().(*net.TCPAddr).Port
	s.startTCP(t, 0)
	s.tcpPort = s.tcp.Addr().(*net.TCPAddr).Port
	return s
}

func (s *toggleServer) startTCP(t *testing.T, port int) {
	l, err := net.Listen("tcp", net.JoinHostPort(s.ip, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	s.tcp = l
}

// loopbackKwokNode creates a kwok node (test label and taint, like
// testenv.KwokNodes) whose spec.podCIDR is a /24 inside 127.0.0.0/8: kwok
// hands its pods addresses from the node's podCIDR, so they get loopback IPs
// a test can listen on. Deleted in Cleanup.
func loopbackKwokNode(t testing.TB, env *testenv.Env, owner string) string {
	cidr := fmt.Sprintf("127.%d.%d.0/24", 1+rand.IntN(254), rand.IntN(256))
	node, err := env.Kube.CoreV1().Nodes().Create(context.Background(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{GenerateName: owner + "-n",
			Labels:      map[string]string{testenv.TestNodeLabel: owner, "kubernetes.io/os": "linux", "type": "kwok-test"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr},
			Taints: []corev1.Taint{{Key: testenv.TestNodeTaint, Value: owner, Effect: corev1.TaintEffectNoSchedule}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node: %v", err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	return node.Name
}

// TestAgentProbesPodOnItsNode: a NodePodProbe for a kwok node lists a pod
// that kwok runs with a loopback pod IP (the node's podCIDR is in
// 127.0.0.0/8); its probes hit real servers the test starts on that IP; the
// agent reports Succeeded, Failed once
// failureThreshold probes failed, Succeeded again on recovery, and a
// restarted agent keeps the results without a status write.
func TestAgentProbesPodOnItsNode(t *testing.T) {
	l := lab.New(t, time.Minute)
	ctx, client, ns := context.Background(), l.Client, l.NS
	node := loopbackKwokNode(t, l.Env, ns)

	pod := runningGamePod(l, node)
	if !net.ParseIP(pod.Status.PodIP).IsLoopback() {
		t.Fatalf("kwok gave the pod %s, not a loopback address from the node's podCIDR", pod.Status.PodIP)
	}
	srv := newToggleServer(t, pod.Status.PodIP)

	probe := func(h corev1.ProbeHandler) appsv1alpha1.ContainerProbeSpec {
		return appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: h,
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 2}}
	}
	npps := client.AppsV1alpha1().NodePodProbes()
	probeNode(l, node, pod,
		appsv1alpha1.ContainerProbe{Name: "ppm#tcp", ContainerName: "main", Probe: probe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(srv.tcpPort)}})},
		appsv1alpha1.ContainerProbe{Name: "ppm#http", ContainerName: "main", Probe: probe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/idle", Port: intstr.FromInt(srv.httpPort)}})},
	)

	states := func() (map[string]appsv1alpha1.ContainerProbeState, *appsv1alpha1.NodePodProbe, error) {
		npp, err := npps.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		out := map[string]appsv1alpha1.ContainerProbeState{}
		for _, ps := range npp.Status.PodProbeStatuses {
			if ps.UID != string(pod.UID) || ps.Name != pod.Name || ps.Namespace != ns {
				return nil, nil, fmt.Errorf("status entry for another pod: %+v", ps)
			}
			for _, st := range ps.ProbeStates {
				out[st.Name] = st
			}
		}
		return out, npp, nil
	}
	waitStates := func(what string, tcp, http appsv1alpha1.ProbeState) {
		t.Helper()
		t.Logf("waiting: %s", what)
		testenv.Eventually(t, 30*time.Second, func() (bool, error) {
			s, _, err := states()
			if err != nil {
				return false, err
			}
			return s["ppm#tcp"].State == tcp && s["ppm#http"].State == http, nil
		})
	}

	recorder := testenv.EventRecorder(t, l.Env.Kube, ns, "probe-agent", nodeclient.Scheme)
	withRecorder := func(d *Deps) { d.Recorder = recorder }
	agent, stop := startAgent(l, node, withRecorder)
	waitStates("both probes succeed", ok, ok)
	s, _, err := states()
	if err != nil {
		t.Fatal(err)
	}
	if s["ppm#tcp"].LastProbeTime.Time.IsZero() || s["ppm#tcp"].LastTransitionTime.Time.IsZero() {
		t.Fatalf("times not set: %+v", s["ppm#tcp"])
	}

	_ = srv.tcp.Close()
	srv.healthy.Store(false)
	waitStates("both fail once failureThreshold probes failed", fail, fail)
	s, _, _ = states()
	if s["ppm#http"].Message != "HTTP probe failed with statuscode: 503" || s["ppm#tcp"].Message == "" {
		t.Fatalf("failure messages: tcp %q http %q", s["ppm#tcp"].Message, s["ppm#http"].Message)
	}

	// Each transition is a pod event with OpenKruise's reason.
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		for _, ev := range l.Events(pod.Name) {
			if ev.Reason == EventProbeFailed && strings.Contains(ev.Message, "ppm#http") {
				return true, nil
			}
		}
		return false, nil
	})

	srv.startTCP(t, srv.tcpPort)
	srv.healthy.Store(true)
	waitStates("both recover", ok, ok)

	// Steady state: results unchanged, so no status write at all.
	_, steady, err := states()
	if err != nil {
		t.Fatal(err)
	}
	writes := agent.Writes()
	testenv.Consistently(t, 3*time.Second, func() error {
		if n := agent.Writes(); n != writes {
			return fmt.Errorf("%d status updates sent with nothing changed", n-writes)
		}
		_, now, err := states()
		if err != nil {
			return err
		}
		if now.ResourceVersion != steady.ResourceVersion {
			return fmt.Errorf("status written with nothing changed: %+v", now.Status)
		}
		return nil
	})

	// Restart: the new agent starts from the status; with the servers
	// unchanged it has nothing to write, so no Unknown blip reaches the status.
	stop()
	_, before, err := states()
	if err != nil {
		t.Fatal(err)
	}
	restarted, _ := startAgent(l, node, withRecorder)
	testenv.Consistently(t, 4*time.Second, func() error {
		if n := restarted.Writes(); n != 0 {
			return fmt.Errorf("restarted agent sent %d status updates", n)
		}
		_, now, err := states()
		if err != nil {
			return err
		}
		if now.ResourceVersion != before.ResourceVersion {
			return fmt.Errorf("restarted agent wrote the status: %+v", now.Status)
		}
		return nil
	})
	// ...and it does probe: a failure still shows.
	srv.healthy.Store(false)
	waitStates("restarted agent reports the HTTP failure", ok, fail)

	// Timeout: the server answers no more within timeoutSeconds.
	srv.healthy.Store(true)
	srv.hang.Store(true)
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		s, _, err := states()
		return err == nil && s["ppm#http"].State == fail && strings.Contains(s["ppm#http"].Message, "deadline exceeded"), err
	})
	srv.hang.Store(false)
	waitStates("HTTP recovers after the timeouts", ok, ok)
}

// probeNode creates node's NodePodProbe listing probes for pod, as the
// PodProbeMarker controller would, and deletes it when the test ends.
func probeNode(l *lab.Lab, node string, pod *corev1.Pod, probes ...appsv1alpha1.ContainerProbe) {
	l.T.Helper()
	npps := l.Client.AppsV1alpha1().NodePodProbes()
	testenv.ObjectsOf(l.T, npps, l.Timeout).Create(&appsv1alpha1.NodePodProbe{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: appsv1alpha1.NodePodProbeSpec{PodProbes: []appsv1alpha1.PodProbe{{
			Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID), IP: pod.Status.PodIP, Probes: probes,
		}}},
	})
	l.T.Cleanup(func() { _ = npps.Delete(context.Background(), node, metav1.DeleteOptions{}) })
}

// runningGamePod creates pod "game" (one container) on the test's kwok node
// and waits until kwok runs it: container ID and pod IP set.
func runningGamePod(l *lab.Lab, node string) *corev1.Pod {
	l.T.Helper()
	pods := l.PodObjects()
	pods.Create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "game", Namespace: l.NS},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
			Containers: []corev1.Container{{Name: "main", Image: "game:1"}}},
	})
	return pods.WaitFor("game", "running with a container ID and a pod IP", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Running != nil && cs[0].ContainerID != "" && p.Status.PodIP != ""
	})
}
