// Package integration runs the real PodProbeMarker reconciler in-process
// against the local control plane (kit/testenv), one namespace and its own
// kwok nodes per test. The test itself writes NodePodProbe status, standing
// in for the node agent, and asserts what a user sees on NodePodProbes and
// pods.
package integration

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const waitTimeout = 60 * time.Second

type harness struct {
	*lab.Lab
	markers *testenv.Objects[*appsv1alpha1.PodProbeMarker]
	npps    *testenv.Objects[*appsv1alpha1.NodePodProbe]
	podAPI  *testenv.Objects[*corev1.Pod]
	// podWrites counts the reconciler's pods/status writes (updates or patches), no-op ones
	// included (the API server does not show those as a new resourceVersion).
	podWrites atomic.Int64
}

type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if (r.Method == http.MethodPut || r.Method == http.MethodPatch) && strings.Contains(r.URL.Path, "/pods/") && strings.HasSuffix(r.URL.Path, "/status") {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout)}
	h.markers = testenv.ObjectsOf(t, h.Client.AppsV1alpha1().PodProbeMarkers(h.NS), waitTimeout)
	h.npps = testenv.ObjectsOf(t, h.Client.AppsV1alpha1().NodePodProbes(), waitTimeout)
	h.podAPI = h.PodObjects()
	return h
}

// start runs the reconciler for this test's namespace, as the binary would
// with PodProbeMarkerGate and KruiseDaemon on; its pod writes go through a
// client that counts them (podWrites).
func (h *harness) start() func() {
	d := h.deps()
	cfg := rest.CopyConfig(h.Env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &h.podWrites} })
	d.Kube = kubernetes.NewForConfigOrDie(cfg)
	c, err := controller.New(d)
	require.NoError(h.T, err)
	return h.Start(c, 2, d)
}

// deps are the reconciler's collaborators for this test, its gates as the
// binary's with PodProbeMarkerGate and KruiseDaemon on.
func (h *harness) deps() wiring.Deps {
	return h.Deps("probe-test", h.Gates([]featuregate.Feature{features.PodProbeMarkerGate, features.KruiseDaemon},
		map[featuregate.Feature]bool{features.KruiseDaemon: true}))
}

// nodes creates n kwok nodes of this test and removes their NodePodProbes
// when it ends.
func (h *harness) nodes(n int) []string {
	names := h.Env.KwokNodes(h.T, h.NS, n, nil)
	h.T.Cleanup(func() {
		for _, n := range names {
			err := h.Client.AppsV1alpha1().NodePodProbes().Delete(context.Background(), n, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				h.T.Errorf("delete NodePodProbe %s: %v", n, err)
			}
		}
	})
	return names
}

// pod creates a game-server pod bound to node and returns it once the
// simulated kubelet has started it (Ready), so that the tests' "not written
// again" checks see only the controllers' writes.
func (h *harness) pod(name, node string) *corev1.Pod { h.T.Helper(); return h.podIn(h.NS, name, node) }

// podIn creates a game-server pod in ns bound to node, once Ready.
func (h *harness) podIn(ns, name, node string) *corev1.Pod {
	h.T.Helper()
	pods := testenv.ObjectsOf(h.T, h.Env.Kube.CoreV1().Pods(ns), waitTimeout)
	pods.Create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "game-server"}},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
			Containers:  []corev1.Container{{Name: "game-server", Image: "registry.local/game:v1"}},
		},
	})
	return pods.WaitFor(name, "Ready", testenv.PodReady)
}

func (h *harness) getPod(name string) *corev1.Pod { h.T.Helper(); return h.podAPI.Get(name) }

// waitPod polls pod name until cond holds.
func (h *harness) waitPod(name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	h.T.Helper()
	return h.podAPI.WaitFor(name, "the test's condition", cond)
}

// waitNPP polls node's NodePodProbe until cond holds; a missing object is
// passed as nil.
func (h *harness) waitNPP(node string, cond func(*appsv1alpha1.NodePodProbe) bool) *appsv1alpha1.NodePodProbe {
	h.T.Helper()
	var got *appsv1alpha1.NodePodProbe
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		npp, err := h.Client.AppsV1alpha1().NodePodProbes().Get(context.Background(), node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			got = nil
			return cond(nil), nil
		}
		if err != nil {
			return false, err
		}
		got = npp
		return cond(npp), nil
	})
	return got
}

// setStatus writes the probe states of pod into node's NodePodProbe
// status, as the agent would.
func (h *harness) setStatus(node string, pod *corev1.Pod, states ...appsv1alpha1.ContainerProbeState) {
	h.T.Helper()
	h.npps.ModifyStatus(node, func(npp *appsv1alpha1.NodePodProbe) {
		npp.Status.PodProbeStatuses = []appsv1alpha1.PodProbeStatus{{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID), ProbeStates: states}}
	})
}

// probesOf returns the probe names the NodePodProbe lists for pod (by UID).
func probesOf(npp *appsv1alpha1.NodePodProbe, pod *corev1.Pod) []string {
	if npp == nil {
		return nil
	}
	var out []string
	for _, pp := range npp.Spec.PodProbes {
		if pp.UID == string(pod.UID) && pp.Name == pod.Name && pp.Namespace == pod.Namespace {
			for _, pr := range pp.Probes {
				out = append(out, pr.Name)
			}
		}
	}
	return out
}

func condition(p *corev1.Pod, t string) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if string(p.Status.Conditions[i].Type) == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// touchNPP changes an annotation of node's NodePodProbe: an event for the
// reconciler without any change to what it copies onto pods.
func (h *harness) touchNPP(node string) {
	h.T.Helper()
	h.npps.Modify(node, func(npp *appsv1alpha1.NodePodProbe) {
		if npp.Annotations == nil {
			npp.Annotations = map[string]string{}
		}
		npp.Annotations["flotilla.dev/test-touch"] = time.Now().String()
	})
}
