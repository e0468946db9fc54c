package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Unit tests run without a control plane under -short; testenv skips the integration tests then.
func TestMain(m *testing.M) { testenv.Main(m) }

// startAgent runs the real agent in-process for node, with informers scoped
// the way probe-agent scopes them.
func startAgent(t *testing.T, kube kubernetes.Interface, client versioned.Interface, node string) (*Agent, func()) {
	kubeInf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(controller.StripManagedFields),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = NodePodFieldSelector(node) }))
	flotInf := flotillainformers.NewSharedInformerFactoryWithOptions(client, 0,
		flotillainformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = NodeNameFieldSelector(node) }))
	a, err := New(Deps{NodeName: node, Client: client, KubeInformers: kubeInf, Informers: flotInf,
		Clock: clock.RealClock{}, BatchDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return a, testenv.StartController(t, a, 1, kubeInf, flotInf)
}

// toggleServer is a TCP listener and an HTTP server on 127.0.0.1 whose
// health the test switches.
type toggleServer struct {
	httpPort, tcpPort int
	healthy           atomic.Bool
	tcp               net.Listener
}

func newToggleServer(t *testing.T) *toggleServer {
	s := &toggleServer{}
	s.healthy.Store(true)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
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
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
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

// TestAgentProbesPodOnItsNode: a NodePodProbe for a kwok node lists a pod
// (kwok made it Running) whose probes hit real servers on 127.0.0.1 (the
// NodePodProbe's pod IP); the agent reports Succeeded, Failed once
// failureThreshold probes failed, Succeeded again on recovery, and a
// restarted agent keeps the results without a status write.
func TestAgentProbesPodOnItsNode(t *testing.T) {
	env := testenv.Get(t)
	t.Parallel()
	ctx := context.Background()
	client, err := versioned.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	node := env.KwokNodes(t, ns, 1, nil)[0]
	srv := newToggleServer(t)

	pod, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "game", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
			Containers: []corev1.Container{{Name: "main", Image: "game:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil, nil
	})

	probe := func(h corev1.ProbeHandler) appsv1alpha1.ContainerProbeSpec {
		return appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: h,
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 2}}
	}
	npps := client.AppsV1alpha1().NodePodProbes()
	_, err = npps.Create(ctx, &appsv1alpha1.NodePodProbe{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: appsv1alpha1.NodePodProbeSpec{PodProbes: []appsv1alpha1.PodProbe{{
			Name: pod.Name, Namespace: ns, UID: string(pod.UID), IP: "127.0.0.1",
			Probes: []appsv1alpha1.ContainerProbe{
				{Name: "ppm#tcp", ContainerName: "main", Probe: probe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(srv.tcpPort)}})},
				{Name: "ppm#http", ContainerName: "main", Probe: probe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/idle", Port: intstr.FromInt(srv.httpPort)}})},
			},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = npps.Delete(context.Background(), node, metav1.DeleteOptions{}) })

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

	agent, stop := startAgent(t, env.Kube, client, node)
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
	restarted, _ := startAgent(t, env.Kube, client, node)
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
}
