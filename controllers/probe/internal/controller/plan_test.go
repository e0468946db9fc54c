package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

const idleCondition = "game.io/idle"

// gameServer is the seed's (OpenKruise v1.3) game-server PodProbeMarker.
func gameServer() *appsv1alpha1.PodProbeMarker {
	return &appsv1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: "game-server-probe", Namespace: "ns"},
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
					{State: appsv1alpha1.ProbeSucceeded, Labels: map[string]string{"gameserver-idle": "true"},
						Annotations: map[string]string{"controller.kubernetes.io/pod-deletion-cost": "-10"}},
					{State: appsv1alpha1.ProbeFailed, Labels: map[string]string{"gameserver-idle": "false"},
						Annotations: map[string]string{"controller.kubernetes.io/pod-deletion-cost": "10"}},
				},
				PodConditionType: idleCondition,
			}},
		},
	}
}

func gamePod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid-" + "name", Labels: map[string]string{"app": "game-server"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "game-server",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
}

func TestDesiredPodProbes(t *testing.T) {
	deleting := gameServer()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	other := gameServer()
	other.Namespace = "other"
	named := gameServer()
	named.Name = "http"
	named.Spec.Probes[0].Probe.Exec = nil
	named.Spec.Probes[0].Probe.HTTPGet = &corev1.HTTPGetAction{Path: "/idle", Port: intstr.FromString("http")}
	badPort := named.DeepCopy()
	badPort.Spec.Probes[0].Probe.HTTPGet.Port = intstr.FromString("nope")
	noContainer := gameServer()
	noContainer.Spec.Probes[0].ContainerName = "sidecar"
	finished := gamePod("done", "n1")
	finished.Status.Phase = corev1.PodSucceeded
	unlabelled := gamePod("web", "n1")
	unlabelled.Labels = map[string]string{"app": "web"}

	tests := []struct {
		name    string
		pods    []*corev1.Pod
		markers []*appsv1alpha1.PodProbeMarker
		want    map[string][]string // pod → probe names
	}{
		{name: "seed marker lists pod and probe", pods: []*corev1.Pod{gamePod("a", "n1")}, markers: []*appsv1alpha1.PodProbeMarker{gameServer()},
			want: map[string][]string{"a": {"game-server-probe#Idle"}}},
		{name: "two markers, sorted by name", pods: []*corev1.Pod{gamePod("a", "n1")}, markers: []*appsv1alpha1.PodProbeMarker{named, gameServer()},
			want: map[string][]string{"a": {"game-server-probe#Idle", "http#Idle"}}},
		{name: "deleting marker places nothing", pods: []*corev1.Pod{gamePod("a", "n1")}, markers: []*appsv1alpha1.PodProbeMarker{deleting}, want: map[string][]string{}},
		{name: "other namespace places nothing", pods: []*corev1.Pod{gamePod("a", "n1")}, markers: []*appsv1alpha1.PodProbeMarker{other}, want: map[string][]string{}},
		{name: "finished and unselected pods are not listed", pods: []*corev1.Pod{finished, unlabelled}, markers: []*appsv1alpha1.PodProbeMarker{gameServer()}, want: map[string][]string{}},
		{name: "unknown named port skips the probe", pods: []*corev1.Pod{gamePod("a", "n1")}, markers: []*appsv1alpha1.PodProbeMarker{badPort}, want: map[string][]string{}},
		{name: "missing container skips the probe", pods: []*corev1.Pod{gamePod("a", "n1")}, markers: []*appsv1alpha1.PodProbeMarker{noContainer}, want: map[string][]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string][]string{}
			for _, pp := range desiredPodProbes(tt.pods, tt.markers) {
				assert.Equal(t, "ns", pp.Namespace)
				assert.Equal(t, "10.0.0.1", pp.IP)
				for _, pr := range pp.Probes {
					got[pp.Name] = append(got[pp.Name], pr.Name)
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}

	t.Run("named port resolved to the container's number", func(t *testing.T) {
		got := desiredPodProbes([]*corev1.Pod{gamePod("a", "n1")}, []*appsv1alpha1.PodProbeMarker{named})
		require.Len(t, got, 1)
		assert.Equal(t, intstr.FromInt32(8080), got[0].Probes[0].Probe.HTTPGet.Port)
		assert.Equal(t, intstr.FromString("http"), named.Spec.Probes[0].Probe.HTTPGet.Port, "the marker is not mutated")
	})
}

func TestMergeSpecKeepsOtherNamespaces(t *testing.T) {
	existing := []appsv1alpha1.PodProbe{{Namespace: "a", Name: "p"}, {Namespace: "b", Name: "q"}}
	got := mergeSpec(existing, []appsv1alpha1.PodProbe{{Namespace: "b", Name: "r"}}, func(ns string) bool { return ns == "b" })
	assert.Equal(t, []appsv1alpha1.PodProbe{{Namespace: "a", Name: "p"}, {Namespace: "b", Name: "r"}}, got)
}

func TestMarkPod(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2022, 9, 9, 7, 13, 4, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(time.Minute))
	ok := appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeSucceeded, LastProbeTime: t1, LastTransitionTime: t1}
	failed := appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeFailed, LastProbeTime: t2, LastTransitionTime: t2, Message: "busy"}
	markers := map[string]*appsv1alpha1.PodProbeMarker{"game-server-probe": gameServer()}
	idle := func() *corev1.Pod {
		p := gamePod("a", "n1")
		p.Labels["gameserver-idle"] = "true"
		p.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": "-10"}
		p.Status.Conditions = []corev1.PodCondition{{Type: idleCondition, Status: corev1.ConditionTrue, LastProbeTime: t1, LastTransitionTime: t1}}
		return p
	}

	tests := []struct {
		name       string
		pod        *corev1.Pod
		states     []appsv1alpha1.ContainerProbeState
		markers    map[string]*appsv1alpha1.PodProbeMarker
		wantWrite  bool
		wantLabel  string
		wantCost   string
		wantStatus corev1.ConditionStatus
		wantMsg    string
		wantLabels map[string]string // when set: all labels, and no condition expected
	}{
		{name: "succeeded marks idle (seed)", pod: gamePod("a", "n1"), states: []appsv1alpha1.ContainerProbeState{ok}, markers: markers,
			wantWrite: true, wantLabel: "true", wantCost: "-10", wantStatus: corev1.ConditionTrue},
		{name: "already marked: no write", pod: idle(), states: []appsv1alpha1.ContainerProbeState{ok}, markers: markers},
		{name: "only a newer lastProbeTime: no write", pod: idle(), markers: markers,
			states: []appsv1alpha1.ContainerProbeState{{Name: ok.Name, State: appsv1alpha1.ProbeSucceeded, LastProbeTime: t2, LastTransitionTime: t1}}},
		{name: "failed swaps the policy, message copied", pod: idle(), states: []appsv1alpha1.ContainerProbeState{failed}, markers: markers,
			wantWrite: true, wantLabel: "false", wantCost: "10", wantStatus: corev1.ConditionFalse, wantMsg: "busy"},
		// OpenKruise: an Unknown state is condition False and takes the
		// markers of the policies (none is Unknown's) off the pod.
		{name: "unknown state unmarks and sets the condition False", pod: idle(), markers: markers,
			states:    []appsv1alpha1.ContainerProbeState{{Name: ok.Name, State: appsv1alpha1.ProbeUnknown, LastProbeTime: t2, LastTransitionTime: t2, Message: "no runtime"}},
			wantWrite: true, wantLabel: "", wantCost: "", wantStatus: corev1.ConditionFalse, wantMsg: "no runtime"},
		{name: "unknown state on an unmarked pod: condition False", pod: gamePod("a", "n1"), markers: markers,
			states:    []appsv1alpha1.ContainerProbeState{{Name: ok.Name, State: appsv1alpha1.ProbeUnknown, LastProbeTime: t1, LastTransitionTime: t1}},
			wantWrite: true, wantStatus: corev1.ConditionFalse},
		{name: "unknown state with policies of distinct keys removes both", pod: func() *corev1.Pod {
			p := gamePod("a", "n1")
			p.Labels["idle"], p.Labels["busy"] = "yes", "yes"
			return p
		}(), markers: map[string]*appsv1alpha1.PodProbeMarker{"game-server-probe": func() *appsv1alpha1.PodProbeMarker {
			m := gameServer()
			m.Spec.Probes[0].PodConditionType = ""
			m.Spec.Probes[0].MarkerPolicy = []appsv1alpha1.ProbeMarkerPolicy{
				{State: appsv1alpha1.ProbeSucceeded, Labels: map[string]string{"idle": "yes"}},
				{State: appsv1alpha1.ProbeFailed, Labels: map[string]string{"busy": "yes"}},
			}
			return m
		}()},
			states:    []appsv1alpha1.ContainerProbeState{{Name: ok.Name, State: appsv1alpha1.ProbeUnknown}},
			wantWrite: true, wantLabels: map[string]string{"app": "game-server"}},
		{name: "empty state: no write", pod: idle(), markers: markers,
			states: []appsv1alpha1.ContainerProbeState{{Name: ok.Name}}},
		{name: "marker gone: no write", pod: gamePod("a", "n1"), states: []appsv1alpha1.ContainerProbeState{ok}, markers: nil},
		{name: "probe not in marker: no write", pod: gamePod("a", "n1"), markers: markers,
			states: []appsv1alpha1.ContainerProbeState{{Name: "game-server-probe#Busy", State: appsv1alpha1.ProbeSucceeded}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.pod.DeepCopy()
			got := markPod(tt.pod, tt.states, tt.markers)
			assert.Equal(t, before, tt.pod, "input not mutated")
			if !tt.wantWrite {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			if tt.wantLabels != nil {
				assert.Equal(t, tt.wantLabels, got.Labels)
				return
			}
			assert.Equal(t, tt.wantLabel, got.Labels["gameserver-idle"])
			assert.Equal(t, tt.wantCost, got.Annotations["controller.kubernetes.io/pod-deletion-cost"])
			var cond *corev1.PodCondition
			for i := range got.Status.Conditions {
				if got.Status.Conditions[i].Type == idleCondition {
					cond = &got.Status.Conditions[i]
				}
			}
			require.NotNil(t, cond)
			assert.Equal(t, tt.wantStatus, cond.Status)
			assert.Equal(t, tt.wantMsg, cond.Message)
			assert.Equal(t, tt.states[0].LastProbeTime, cond.LastProbeTime)
			assert.Equal(t, tt.states[0].LastTransitionTime, cond.LastTransitionTime)
		})
	}
}

func TestUnmarkPod(t *testing.T) {
	p := gamePod("a", "n1")
	p.Labels["gameserver-idle"] = "true"
	p.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": "-10", "keep": "me"}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: idleCondition, Status: corev1.ConditionTrue}}
	got := unmarkPod(p, gameServer())
	require.NotNil(t, got)
	assert.Equal(t, map[string]string{"app": "game-server"}, got.Labels)
	assert.Equal(t, map[string]string{"keep": "me"}, got.Annotations)
	assert.Equal(t, []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}, got.Status.Conditions)
	assert.Nil(t, unmarkPod(got, gameServer()), "nothing left to remove: no write")

	// A value someone else set is not ours to remove.
	p2 := gamePod("b", "n1")
	p2.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": "5"}
	assert.Nil(t, unmarkPod(p2, gameServer()))
}

func TestMatchedPods(t *testing.T) {
	unscheduled := gamePod("u", "")
	assert.EqualValues(t, 2, matchedPods(gameServer(), []*corev1.Pod{gamePod("a", "n1"), gamePod("b", "n2"), unscheduled}))
}

func TestRetiredProbes(t *testing.T) {
	withPort := gameServer()
	withPort.Spec.Probes = append(withPort.Spec.Probes, appsv1alpha1.PodContainerProbe{Name: "Port", ContainerName: "game-server",
		MarkerPolicy: []appsv1alpha1.ProbeMarkerPolicy{{State: appsv1alpha1.ProbeSucceeded, Labels: map[string]string{"port-open": "true"}}}})
	relabelled := gameServer()
	relabelled.Spec.Probes[0].MarkerPolicy[0].Labels = map[string]string{"gameserver-idle": "yes"}
	relabelled.Spec.Probes[0].PodConditionType = "game.io/free"

	tests := []struct {
		name     string
		old, new *appsv1alpha1.PodProbeMarker
		want     []appsv1alpha1.PodContainerProbe
	}{
		{name: "unchanged", old: gameServer(), new: gameServer()},
		{name: "probe added", old: gameServer(), new: withPort},
		{name: "probe removed", old: withPort, new: gameServer(), want: []appsv1alpha1.PodContainerProbe{withPort.Spec.Probes[1]}},
		{name: "label value and condition type changed", old: gameServer(), new: relabelled, want: []appsv1alpha1.PodContainerProbe{{
			Name: "Idle", PodConditionType: idleCondition,
			MarkerPolicy: []appsv1alpha1.ProbeMarkerPolicy{{State: appsv1alpha1.ProbeSucceeded, Labels: map[string]string{"gameserver-idle": "true"}}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, retiredProbes(tt.old, tt.new))
		})
	}
}
