package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const (
	idleCondition = "game.io/idle"
	idleLabel     = "gameserver-idle"
	deletionCost  = "controller.kubernetes.io/pod-deletion-cost"
)

// gameServer is the seed's (OpenKruise v1.3 §1) PodProbeMarker.
func gameServer() *appsv1alpha1.PodProbeMarker {
	return &appsv1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: "game-server-probe"},
		Spec: appsv1alpha1.PodProbeMarkerSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "game-server"}},
			Probes: []appsv1alpha1.PodContainerProbe{{
				Name:          "Idle",
				ContainerName: "game-server",
				Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{
					ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/home/game/idle.sh"}}},
					InitialDelaySeconds: 10, TimeoutSeconds: 3, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
				}},
				MarkerPolicy: []appsv1alpha1.ProbeMarkerPolicy{
					{State: appsv1alpha1.ProbeSucceeded, Labels: map[string]string{idleLabel: "true"}, Annotations: map[string]string{deletionCost: "-10"}},
					{State: appsv1alpha1.ProbeFailed, Labels: map[string]string{idleLabel: "false"}, Annotations: map[string]string{deletionCost: "10"}},
				},
				PodConditionType: idleCondition,
			}},
		},
	}
}

// Item 1: the NodePodProbe of a selected pod's node lists it with its
// probes; it follows probe changes, pod deletion, marker deletion and node
// deletion.
func TestNodePodProbeFollowsPodsMarkersAndNodes(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2)
	h.start()
	a := h.pod("a", nodes[0])
	b := h.pod("b", nodes[1])
	h.markers.Create(gameServer())

	for i, p := range []*corev1.Pod{a, b} {
		npp := h.waitNPP(nodes[i], func(n *appsv1alpha1.NodePodProbe) bool {
			return slices.Equal(probesOf(n, p), []string{"game-server-probe#Idle"})
		})
		require.Len(t, npp.Spec.PodProbes, 1, "only this pod on node %s", nodes[i])
		assert.Equal(t, "game-server", npp.Spec.PodProbes[0].Probes[0].ContainerName)
		assert.Equal(t, []string{"/home/game/idle.sh"}, npp.Spec.PodProbes[0].Probes[0].Probe.Exec.Command)
	}
	h.markers.WaitFor("game-server-probe", "matchedPods 2 and finalizer", func(m *appsv1alpha1.PodProbeMarker) bool {
		return m.Status.MatchedPods == 2 && m.Status.ObservedGeneration == m.Generation && slices.Contains(m.Finalizers, "kruise.io/node-pod-probe-cleanup")
	})

	// A probe added to the marker appears on the pod's entry.
	h.markers.Modify("game-server-probe", func(m *appsv1alpha1.PodProbeMarker) {
		m.Spec.Probes = append(m.Spec.Probes, appsv1alpha1.PodContainerProbe{
			Name: "Port", ContainerName: "game-server", PodConditionType: "game.io/port",
			Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(7777)}}}},
		})
	})
	h.waitNPP(nodes[0], func(n *appsv1alpha1.NodePodProbe) bool {
		return slices.Equal(probesOf(n, a), []string{"game-server-probe#Idle", "game-server-probe#Port"})
	})

	// A deleted pod leaves its node's NodePodProbe.
	require.NoError(t, h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), "b", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	h.waitNPP(nodes[1], func(n *appsv1alpha1.NodePodProbe) bool { return n != nil && len(n.Spec.PodProbes) == 0 })

	// A deleted marker leaves every NodePodProbe and is released.
	require.NoError(t, h.Client.AppsV1alpha1().PodProbeMarkers(h.NS).Delete(context.Background(), "game-server-probe", metav1.DeleteOptions{}))
	h.waitNPP(nodes[0], func(n *appsv1alpha1.NodePodProbe) bool { return n != nil && len(n.Spec.PodProbes) == 0 })
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		_, err := h.Client.AppsV1alpha1().PodProbeMarkers(h.NS).Get(context.Background(), "game-server-probe", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// The NodePodProbe of a deleted node goes.
	require.NoError(t, h.Env.Kube.CoreV1().Nodes().Delete(context.Background(), nodes[1], metav1.DeleteOptions{}))
	h.waitNPP(nodes[1], func(n *appsv1alpha1.NodePodProbe) bool { return n == nil })
}

// The sample (deploy/samples/podprobemarker.yaml) is the seed's marker and
// the API server accepts it.
func TestSampleIsTheSeedMarker(t *testing.T) {
	h := newHarness(t)
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "../../../../../deploy/samples/podprobemarker.yaml"))
	require.NoError(t, err)
	m := &appsv1alpha1.PodProbeMarker{}
	require.NoError(t, yaml.UnmarshalStrict(raw, m))
	assert.Equal(t, gameServer().Spec, m.Spec)
	m.Namespace = h.NS
	_, err = h.Client.AppsV1alpha1().PodProbeMarkers(h.NS).Create(context.Background(), m, metav1.CreateOptions{})
	require.NoError(t, err)
}

// Item 2 and the seed's game-server example at the pod level: probe results
// written into NodePodProbe status become the markerPolicy label and
// annotation and the podConditionType condition, one write per change; the
// markers go with the marker.
func TestGameServerIdleMarking(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(1)
	h.start()
	pod := h.pod("game-server-0", nodes[0])
	h.markers.Create(gameServer())
	h.waitNPP(nodes[0], func(n *appsv1alpha1.NodePodProbe) bool { return len(probesOf(n, pod)) == 1 })

	t1 := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	h.setStatus(nodes[0], pod, appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeSucceeded, LastProbeTime: t1, LastTransitionTime: t1})
	got := h.waitPod(pod.Name, func(p *corev1.Pod) bool { return p.Labels[idleLabel] == "true" })
	assert.Equal(t, "-10", got.Annotations[deletionCost])
	cond := condition(got, idleCondition)
	require.NotNil(t, cond)
	assert.Equal(t, corev1.ConditionTrue, cond.Status)
	assert.True(t, cond.LastProbeTime.Equal(&t1), "lastProbeTime %v", cond.LastProbeTime)
	assert.True(t, cond.LastTransitionTime.Equal(&t1), "lastTransitionTime %v", cond.LastTransitionTime)
	assert.Empty(t, cond.Message)

	// Nothing changed: the pod is not written again, even when the
	// NodePodProbe is (a re-written identical status).
	assert.EqualValues(t, 1, h.podWrites.Load(), "one pods/status write for the change")
	rv := got.ResourceVersion
	h.touchNPP(nodes[0])
	testenv.Consistently(t, 3*time.Second, func() error {
		if p := h.getPod(pod.Name); p.ResourceVersion != rv {
			return fmt.Errorf("pod written again without a change: rv %s → %s", rv, p.ResourceVersion)
		}
		if n := h.podWrites.Load(); n != 1 {
			return fmt.Errorf("%d pods/status writes, want 1", n)
		}
		return nil
	})

	// Failed: the other policy replaces the first; the condition turns False
	// with the probe's message.
	t2 := metav1.NewTime(t1.Add(time.Minute))
	h.setStatus(nodes[0], pod, appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeFailed, LastProbeTime: t2, LastTransitionTime: t2, Message: "players connected"})
	got = h.waitPod(pod.Name, func(p *corev1.Pod) bool { return p.Labels[idleLabel] == "false" })
	assert.EqualValues(t, 2, h.podWrites.Load(), "labels, annotations and condition in one write")
	assert.Equal(t, "10", got.Annotations[deletionCost])
	cond = condition(got, idleCondition)
	require.NotNil(t, cond)
	assert.Equal(t, corev1.ConditionFalse, cond.Status)
	assert.Equal(t, "players connected", cond.Message)
	assert.True(t, cond.LastTransitionTime.Equal(&t2))

	// The marker goes: so do its label, annotation and condition.
	require.NoError(t, h.Client.AppsV1alpha1().PodProbeMarkers(h.NS).Delete(context.Background(), "game-server-probe", metav1.DeleteOptions{}))
	got = h.waitPod(pod.Name, func(p *corev1.Pod) bool {
		_, l := p.Labels[idleLabel]
		_, a := p.Annotations[deletionCost]
		return !l && !a && condition(p, idleCondition) == nil
	})
	assert.Equal(t, "game-server", got.Labels["app"])
}

// Item 2: a probe removed from a live marker takes its label and condition
// off the pods; the other probe's markers stay.
func TestRemovedProbeTakesItsMarkers(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(1)
	h.start()
	pod := h.pod("game-server-0", nodes[0])
	m := gameServer()
	m.Spec.Probes = append(m.Spec.Probes, appsv1alpha1.PodContainerProbe{
		Name: "Port", ContainerName: "game-server", PodConditionType: "game.io/port",
		Probe:        appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(7777)}}}},
		MarkerPolicy: []appsv1alpha1.ProbeMarkerPolicy{{State: appsv1alpha1.ProbeSucceeded, Labels: map[string]string{"port-open": "true"}}},
	})
	h.markers.Create(m)
	h.waitNPP(nodes[0], func(n *appsv1alpha1.NodePodProbe) bool { return len(probesOf(n, pod)) == 2 })
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	h.setStatus(nodes[0], pod,
		appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeSucceeded, LastProbeTime: now, LastTransitionTime: now},
		appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Port", State: appsv1alpha1.ProbeSucceeded, LastProbeTime: now, LastTransitionTime: now})
	h.waitPod(pod.Name, func(p *corev1.Pod) bool {
		return p.Labels["port-open"] == "true" && p.Labels[idleLabel] == "true" && condition(p, "game.io/port") != nil
	})

	h.markers.Modify("game-server-probe", func(m *appsv1alpha1.PodProbeMarker) { m.Spec.Probes = m.Spec.Probes[:1] })
	got := h.waitPod(pod.Name, func(p *corev1.Pod) bool {
		_, l := p.Labels["port-open"]
		return !l && condition(p, "game.io/port") == nil
	})
	assert.Equal(t, "true", got.Labels[idleLabel])
	assert.Equal(t, "-10", got.Annotations[deletionCost])
	assert.NotNil(t, condition(got, idleCondition))
	h.waitNPP(nodes[0], func(n *appsv1alpha1.NodePodProbe) bool {
		return slices.Equal(probesOf(n, pod), []string{"game-server-probe#Idle"})
	})
}
