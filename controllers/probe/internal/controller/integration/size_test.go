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

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/controller"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// startScoped runs one reconciler for several namespaces, as the cluster-wide
// one writes one NodePodProbe for every tenant on a node: its pods are those
// of node (a node of this test), its writes limited to namespaces.
func (h *harness) startScoped(node string, o controller.Options) {
	h.T.Helper()
	d := h.deps()
	d.Namespace = ""
	d.KubeInformers = informers.NewSharedInformerFactoryWithOptions(h.Env.Kube, 0, informers.WithTransform(kitcontroller.StripManagedFields))
	// Registered first, so the reconciler's own request for a pod informer
	// gets this one: every namespace, this test's node only.
	d.KubeInformers.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(c, "", resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			func(lo *metav1.ListOptions) {
				lo.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
			})
	})
	d.Informers = flotillainformers.NewSharedInformerFactoryWithOptions(h.Client, 0)
	c, err := controller.NewWithOptions(d, o)
	require.NoError(h.T, err)
	h.Start(c, 2, d)
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
	bad := h.Env.Namespace(t)
	node := h.nodes(1)[0]
	h.startScoped(node, controller.Options{Namespaces: []string{h.NS, bad}})
	for i := range 4 {
		h.podIn(bad, fmt.Sprintf("x-%d", i), node)
	}
	_, err := h.Client.AppsV1alpha1().PodProbeMarkers(bad).Create(context.Background(), hugeMarker(), metav1.CreateOptions{})
	require.NoError(t, err)
	good := h.pod("game-server-0", node)
	h.markers.Create(gameServer())

	npp := h.waitNPP(node, func(n *appsv1alpha1.NodePodProbe) bool { return len(probesOf(n, good)) == 1 })
	for _, pp := range npp.Spec.PodProbes {
		assert.NotEqual(t, bad, pp.Namespace, "the oversized namespace's pod %s is listed", pp.Name)
	}
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, e := range h.Env.Events(t, bad, "huge") {
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
	bad := h.Env.Namespace(t)
	node := h.nodes(1)[0]
	h.startScoped(node, controller.Options{Namespaces: []string{h.NS, bad}, SpecBudget: 64 << 20})
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
	_, err := h.Client.AppsV1alpha1().PodProbeMarkers(bad).Create(context.Background(), hugeMarker(), metav1.CreateOptions{})
	require.NoError(t, err)
	// The reconciler now fails every spec write of this node; a new result
	// still reaches the pod.
	t2 := metav1.NewTime(t1.Add(time.Minute))
	h.setStatus(node, good, appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeFailed, LastProbeTime: t2, LastTransitionTime: t2, Message: "players connected"})
	h.waitPod(good.Name, func(p *corev1.Pod) bool { return p.Labels[idleLabel] == "false" })
	npp := h.waitNPP(node, func(*appsv1alpha1.NodePodProbe) bool { return true })
	assert.Empty(t, probesOf(npp, pods[0]), "the oversized spec was never stored")
}
