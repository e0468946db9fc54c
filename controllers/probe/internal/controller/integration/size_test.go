package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/controller"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// startScoped runs one reconciler for several namespaces, as the cluster-wide
// one writes one NodePodProbe for every tenant on a node: its pods are those
// of node (a node of this test), its writes limited to namespaces.
func (h *harness) startScoped(node string, o controller.Options) {
	scheme, err := wiring.NewScheme()
	require.NoError(h.t, err)
	gate := features.MustNewGate(features.PodProbeMarkerGate, features.KruiseDaemon)
	require.NoError(h.t, gate.SetFromMap(map[string]bool{string(features.KruiseDaemon): true}))
	kubeInf := informers.NewSharedInformerFactoryWithOptions(h.env.Kube, 0, informers.WithTransform(kitcontroller.StripManagedFields))
	// Registered first, so the reconciler's own request for a pod informer
	// gets this one: every namespace, this test's node only.
	kubeInf.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(c, "", resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			func(lo *metav1.ListOptions) {
				lo.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
			})
	})
	d := controller.Deps{
		Kube:          h.env.Kube,
		Client:        h.client,
		KubeInformers: kubeInf,
		Informers:     flotillainformers.NewSharedInformerFactoryWithOptions(h.client, 0),
		Gates:         gate,
		Clock:         clock.RealClock{},
		Recorder:      testenv.EventRecorder(h.t, h.env.Kube, h.ns, "probe-test", scheme),
		QueueOptions:  kitcontroller.DefaultQueueOptions(),
	}
	c, err := controller.NewWithOptions(d, o)
	require.NoError(h.t, err)
	testenv.StartController(h.t, c, 2, d.KubeInformers, d.Informers)
}

// podIn creates a game-server pod in ns bound to node, once Ready.
func (h *harness) podIn(ns, name, node string) *corev1.Pod {
	h.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "game-server"}},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
			Containers:  []corev1.Container{{Name: "game-server", Image: "registry.local/game:v1"}},
		},
	}
	_, err := h.env.Kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(h.t, err)
	var got *corev1.Pod
	testenv.Eventually(h.t, waitTimeout, func() (bool, error) {
		got, err = h.env.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && testenv.PodReady(got), err
	})
	return got
}

// hugeMarker is a valid PodProbeMarker at the CRD's per-probe bounds: 64
// exec probes of two 4000-character arguments, ≈ 512 KiB in every selected
// pod's NodePodProbe entry. Four selected pods on one node take that node's
// NodePodProbe past etcd's 1.5 MiB request limit.
func hugeMarker() *appsv1alpha1.PodProbeMarker {
	m := &appsv1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: "huge"},
		Spec:       appsv1alpha1.PodProbeMarkerSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "game-server"}}},
	}
	arg := strings.Repeat("x", 4000)
	for i := range 64 {
		m.Spec.Probes = append(m.Spec.Probes, appsv1alpha1.PodContainerProbe{
			Name: fmt.Sprintf("p%d", i), ContainerName: "game-server", PodConditionType: fmt.Sprintf("huge.io/p%d", i),
			Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				Exec: &corev1.ExecAction{Command: []string{"sh", "-c", arg, arg}}}}},
		})
	}
	return m
}

// A tenant whose markers would take a node's NodePodProbe past etcd's object
// limit loses its own probes on that node, with a Warning event on its
// marker; the other tenants' entries are still written and their results
// still reach their pods.
func TestOversizedMarkerCostsOnlyItsNamespace(t *testing.T) {
	h := newHarness(t)
	bad := h.env.Namespace(t)
	node := h.nodes(1)[0]
	h.startScoped(node, controller.Options{Namespaces: []string{h.ns, bad}})
	for i := range 4 {
		h.podIn(bad, fmt.Sprintf("x-%d", i), node)
	}
	_, err := h.client.AppsV1alpha1().PodProbeMarkers(bad).Create(context.Background(), hugeMarker(), metav1.CreateOptions{})
	require.NoError(t, err)
	good := h.pod("game-server-0", node)
	h.markers.Create(gameServer())

	npp := h.waitNPP(node, func(n *appsv1alpha1.NodePodProbe) bool { return len(probesOf(n, good)) == 1 })
	for _, pp := range npp.Spec.PodProbes {
		assert.NotEqual(t, bad, pp.Namespace, "the oversized namespace's pod %s is listed", pp.Name)
	}
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, e := range h.env.Events(t, bad, "huge") {
			if e.Reason == controller.ReasonTooLarge && e.Type == corev1.EventTypeWarning {
				t.Logf("event: %s", e.Message)
				return strings.Contains(e.Message, node), nil
			}
		}
		return false, nil
	})

	t1 := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	h.setStatus(node, good, appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeSucceeded, LastProbeTime: t1, LastTransitionTime: t1})
	h.waitPod(good.Name, func(p *corev1.Pod) bool { return p.Labels[idleLabel] == "true" })
}

// When the spec write fails (here: the budget is set above etcd's limit, so
// the oversized spec is sent and refused), the results already reported
// still reach the pods.
func TestResultsReachPodsWhileSpecWriteFails(t *testing.T) {
	h := newHarness(t)
	bad := h.env.Namespace(t)
	node := h.nodes(1)[0]
	h.startScoped(node, controller.Options{Namespaces: []string{h.ns, bad}, SpecBudget: 64 << 20})
	good := h.pod("game-server-0", node)
	h.markers.Create(gameServer())
	h.waitNPP(node, func(n *appsv1alpha1.NodePodProbe) bool { return len(probesOf(n, good)) == 1 })
	t1 := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	h.setStatus(node, good, appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeSucceeded, LastProbeTime: t1, LastTransitionTime: t1})
	h.waitPod(good.Name, func(p *corev1.Pod) bool { return p.Labels[idleLabel] == "true" })

	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, h.podIn(bad, fmt.Sprintf("x-%d", i), node))
	}
	_, err := h.client.AppsV1alpha1().PodProbeMarkers(bad).Create(context.Background(), hugeMarker(), metav1.CreateOptions{})
	require.NoError(t, err)
	// The reconciler now fails every spec write of this node; a new result
	// still reaches the pod.
	t2 := metav1.NewTime(t1.Add(time.Minute))
	h.setStatus(node, good, appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeFailed, LastProbeTime: t2, LastTransitionTime: t2, Message: "players connected"})
	h.waitPod(good.Name, func(p *corev1.Pod) bool { return p.Labels[idleLabel] == "false" })
	npp := h.waitNPP(node, func(*appsv1alpha1.NodePodProbe) bool { return true })
	assert.Empty(t, probesOf(npp, pods[0]), "the oversized spec was never stored")
}
