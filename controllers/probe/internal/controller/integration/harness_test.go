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
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/controller"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const waitTimeout = 60 * time.Second

type harness struct {
	t       *testing.T
	env     *testenv.Env
	ns      string
	client  versioned.Interface
	markers *testenv.Objects[*appsv1alpha1.PodProbeMarker]
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
	t.Parallel()
	env := testenv.Get(t)
	h := &harness{t: t, env: env, ns: env.Namespace(t), client: versioned.NewForConfigOrDie(env.Config)}
	h.markers = testenv.ObjectsOf(t, h.client.AppsV1alpha1().PodProbeMarkers(h.ns), waitTimeout)
	return h
}

// start runs the reconciler for this test's namespace, as the binary would
// with PodProbeMarkerGate and KruiseDaemon on.
func (h *harness) start() func() {
	scheme, err := wiring.NewScheme()
	require.NoError(h.t, err)
	gate := features.MustNewGate(features.PodProbeMarkerGate, features.KruiseDaemon)
	require.NoError(h.t, gate.SetFromMap(map[string]bool{string(features.KruiseDaemon): true}))
	cfg := rest.CopyConfig(h.env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &h.podWrites} })
	d := controller.Deps{
		Kube:          kubernetes.NewForConfigOrDie(cfg),
		Client:        h.client,
		KubeInformers: informers.NewSharedInformerFactoryWithOptions(h.env.Kube, 0, informers.WithNamespace(h.ns), informers.WithTransform(kitcontroller.StripManagedFields)),
		Informers:     flotillainformers.NewSharedInformerFactoryWithOptions(h.client, 0, flotillainformers.WithNamespace(h.ns)),
		Namespace:     h.ns,
		Gates:         gate,
		Clock:         clock.RealClock{},
		Recorder:      testenv.EventRecorder(h.t, h.env.Kube, h.ns, "probe-test", scheme),
		QueueOptions:  kitcontroller.DefaultQueueOptions(),
	}
	c, err := controller.New(d)
	require.NoError(h.t, err)
	return testenv.StartController(h.t, c, 2, d.KubeInformers, d.Informers)
}

// nodes creates n kwok nodes of this test and removes their NodePodProbes
// when it ends.
func (h *harness) nodes(n int) []string {
	names := h.env.KwokNodes(h.t, h.ns, n, nil)
	h.t.Cleanup(func() {
		for _, n := range names {
			err := h.client.AppsV1alpha1().NodePodProbes().Delete(context.Background(), n, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				h.t.Errorf("delete NodePodProbe %s: %v", n, err)
			}
		}
	})
	return names
}

// pod creates a game-server pod bound to node and returns it once the
// simulated kubelet has started it (Ready), so that the tests' "not written
// again" checks see only the controllers' writes.
func (h *harness) pod(name, node string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{"app": "game-server"}},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
			Containers:  []corev1.Container{{Name: "game-server", Image: "registry.local/game:v1"}},
		},
	}
	_, err := h.env.Kube.CoreV1().Pods(h.ns).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(h.t, err)
	return h.waitPod(name, testenv.PodReady)
}

func (h *harness) getPod(name string) *corev1.Pod {
	p, err := h.env.Kube.CoreV1().Pods(h.ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(h.t, err)
	return p
}

// waitPod polls pod name until cond holds.
func (h *harness) waitPod(name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	h.t.Helper()
	var got *corev1.Pod
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) {
		p, err := h.env.Kube.CoreV1().Pods(h.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return cond(p), nil
	})
	return got
}

// waitNPP polls node's NodePodProbe until cond holds; a missing object is
// passed as nil.
func (h *harness) waitNPP(node string, cond func(*appsv1alpha1.NodePodProbe) bool) *appsv1alpha1.NodePodProbe {
	h.t.Helper()
	var got *appsv1alpha1.NodePodProbe
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) {
		npp, err := h.client.AppsV1alpha1().NodePodProbes().Get(context.Background(), node, metav1.GetOptions{})
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
	h.t.Helper()
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) {
		npp, err := h.client.AppsV1alpha1().NodePodProbes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		npp.Status.PodProbeStatuses = []appsv1alpha1.PodProbeStatus{{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID), ProbeStates: states}}
		_, err = h.client.AppsV1alpha1().NodePodProbes().UpdateStatus(context.Background(), npp, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
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
	h.t.Helper()
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) {
		npp, err := h.client.AppsV1alpha1().NodePodProbes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if npp.Annotations == nil {
			npp.Annotations = map[string]string{}
		}
		npp.Annotations["flotilla.dev/test-touch"] = time.Now().String()
		_, err = h.client.AppsV1alpha1().NodePodProbes().Update(context.Background(), npp, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}
