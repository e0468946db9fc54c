package agent

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestDesiredStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	now := metav1.NewTime(t0.Add(2 * time.Minute))
	spec := appsv1alpha1.NodePodProbeSpec{PodProbes: []appsv1alpha1.PodProbe{
		{Namespace: "ns", Name: "a", UID: "ua", Probes: []appsv1alpha1.ContainerProbe{{Name: "m#idle"}, {Name: "m#ready"}}},
		{Namespace: "ns", Name: "b", UID: "ub", Probes: []appsv1alpha1.ContainerProbe{{Name: "m#idle"}}},
	}}
	st := func(name string, s appsv1alpha1.ProbeState, probe, trans metav1.Time, msg string) appsv1alpha1.ContainerProbeState {
		return appsv1alpha1.ContainerProbeState{Name: name, State: s, LastProbeTime: probe, LastTransitionTime: trans, Message: msg}
	}
	existing := appsv1alpha1.NodePodProbeStatus{PodProbeStatuses: []appsv1alpha1.PodProbeStatus{
		{Namespace: "ns", Name: "a", UID: "ua", ProbeStates: []appsv1alpha1.ContainerProbeState{st("m#idle", ok, t0, t0, "")}},
		{Namespace: "ns", Name: "gone", UID: "ug", ProbeStates: []appsv1alpha1.ContainerProbeState{st("m#idle", ok, t0, t0, "")}},
	}}
	cases := []struct {
		name    string
		status  appsv1alpha1.NodePodProbeStatus
		results map[resultKey]result
		want    appsv1alpha1.NodePodProbeStatus
	}{
		{"no results: existing kept, entries of pods out of the spec dropped", existing, nil,
			appsv1alpha1.NodePodProbeStatus{PodProbeStatuses: existing.PodProbeStatuses[:1]}},
		{"changed state moves lastTransitionTime, new entries follow spec order", existing, map[resultKey]result{
			{UID: "ua", Probe: "m#idle"}:  {State: fail, Message: "refused", LastProbeTime: t1},
			{UID: "ub", Probe: "m#idle"}:  {Namespace: "ns", Name: "b", State: unk, LastProbeTime: t1},
			{UID: "ua", Probe: "m#ready"}: {Namespace: "ns", Name: "a", State: ok, LastProbeTime: t1},
		}, appsv1alpha1.NodePodProbeStatus{PodProbeStatuses: []appsv1alpha1.PodProbeStatus{
			{Namespace: "ns", Name: "a", UID: "ua", ProbeStates: []appsv1alpha1.ContainerProbeState{
				st("m#idle", fail, t1, now, "refused"), st("m#ready", ok, t1, now, "")}},
			{Namespace: "ns", Name: "b", UID: "ub", ProbeStates: []appsv1alpha1.ContainerProbeState{st("m#idle", unk, t1, now, "")}},
		}}},
		{"same state, new message: transition time kept", existing, map[resultKey]result{
			{UID: "ua", Probe: "m#idle"}: {State: ok, Message: "slow", LastProbeTime: t1},
		}, appsv1alpha1.NodePodProbeStatus{PodProbeStatuses: []appsv1alpha1.PodProbeStatus{
			{Namespace: "ns", Name: "a", UID: "ua", ProbeStates: []appsv1alpha1.ContainerProbeState{st("m#idle", ok, t1, t0, "slow")}},
		}}},
		{"result of a probe no longer in the spec is ignored", appsv1alpha1.NodePodProbeStatus{}, map[resultKey]result{
			{UID: "ua", Probe: "m#old"}: {State: ok, LastProbeTime: t1},
		}, appsv1alpha1.NodePodProbeStatus{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			npp := &appsv1alpha1.NodePodProbe{Spec: spec, Status: tc.status}
			got := desiredStatus(npp, tc.results, now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestTransitions(t *testing.T) {
	entry := func(states ...appsv1alpha1.ContainerProbeState) appsv1alpha1.NodePodProbeStatus {
		return appsv1alpha1.NodePodProbeStatus{PodProbeStatuses: []appsv1alpha1.PodProbeStatus{{Namespace: "ns", Name: "a", UID: "ua", ProbeStates: states}}}
	}
	s := func(name string, st appsv1alpha1.ProbeState) appsv1alpha1.ContainerProbeState {
		return appsv1alpha1.ContainerProbeState{Name: name, State: st}
	}
	cases := []struct {
		name       string
		prev, next appsv1alpha1.NodePodProbeStatus
		want       []string
	}{
		{"nothing changed", entry(s("p", ok)), entry(s("p", ok)), nil},
		{"Unknown to Succeeded", entry(s("p", unk)), entry(s("p", ok)), []string{"p=Succeeded"}},
		{"new entry Failed", entry(), entry(s("p", fail)), []string{"p=Failed"}},
		{"to Unknown is no event", entry(s("p", ok)), entry(s("p", unk)), nil},
		{"only the changed probe", entry(s("p", ok), s("q", ok)), entry(s("p", ok), s("q", fail)), []string{"q=Failed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, tr := range transitions(tc.prev, tc.next) {
				got = append(got, tr.Probe+"="+string(tr.State))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("transitions = %v, want %v", got, tc.want)
			}
		})
	}
}
