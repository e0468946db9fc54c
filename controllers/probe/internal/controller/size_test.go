package controller

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// entry is a NodePodProbe entry of pod ns/name with one exec probe of
// marker m whose command is n bytes long.
func entry(ns, name, m string, n int) appsv1alpha1.PodProbe {
	return appsv1alpha1.PodProbe{Namespace: ns, Name: name, UID: ns + "-" + name, Probes: []appsv1alpha1.ContainerProbe{{
		Name: ProbeName(m, "p"), ContainerName: "c",
		Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			Exec: &corev1.ExecAction{Command: []string{strings.Repeat("x", n)}}}}},
	}}}
}

func TestFitSpec(t *testing.T) {
	all := func(string) bool { return true }
	onlyA := func(ns string) bool { return ns == "a" }
	small, big := 100, 5000
	cases := []struct {
		name    string
		spec    []appsv1alpha1.PodProbe
		budget  int
		inScope func(string) bool
		want    []string // namespaces dropped, in order
	}{
		{"fits: nothing dropped", []appsv1alpha1.PodProbe{entry("a", "p", "m", small), entry("b", "p", "m", small)}, 4096, all, nil},
		{"the largest namespace goes, the others stay",
			[]appsv1alpha1.PodProbe{entry("a", "p", "m", small), entry("x", "p", "huge", big), entry("b", "p", "m", small)}, 4096, all, []string{"x"}},
		{"a namespace is the unit: many small entries of one namespace outweigh one larger of another",
			[]appsv1alpha1.PodProbe{entry("x", "p1", "m1", 1500), entry("x", "p2", "m2", 1500), entry("x", "p3", "m3", 1500), entry("b", "p", "m", 2000)}, 4096, all, []string{"x"}},
		{"largest first until it fits, then stop",
			[]appsv1alpha1.PodProbe{entry("a", "p", "m", 3000), entry("b", "p", "m", 2000), entry("c", "p", "m", small)}, 1024, all, []string{"a", "b"}},
		{"out-of-scope namespaces count but are never dropped",
			[]appsv1alpha1.PodProbe{entry("a", "p", "m", small), entry("x", "p", "huge", big)}, 4096, onlyA, []string{"a"}},
		{"equal sizes: by name", []appsv1alpha1.PodProbe{entry("b", "p", "m", 3000), entry("a", "p", "m", 3000)}, 4096, all, []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			drop, size := fitSpec(tc.spec, tc.budget, tc.inScope)
			var got []string
			for _, d := range drop {
				got = append(got, d.Namespace)
				if d.Bytes <= 0 {
					t.Errorf("namespace %s dropped with %d bytes", d.Namespace, d.Bytes)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("dropped %v, want %v", got, tc.want)
			}
			kept := withoutNamespaces(tc.spec, drop)
			b, err := json.Marshal(kept)
			if err != nil {
				t.Fatal(err)
			}
			if size < len(b) || size > len(b)+1 {
				t.Errorf("size %d, want the JSON size of what is kept, %d (+1 for a trailing comma)", size, len(b))
			}
			if tc.inScope("x") && size > tc.budget {
				t.Errorf("size %d over the budget %d", size, tc.budget)
			}
		})
	}
}

func TestMarkersIn(t *testing.T) {
	spec := []appsv1alpha1.PodProbe{entry("a", "p1", "m2", 1), entry("a", "p2", "m1", 1), entry("a", "p3", "m2", 1), entry("b", "p", "m3", 1)}
	if got := markersIn(spec, "a"); !reflect.DeepEqual(got, []string{"m1", "m2"}) {
		t.Fatalf("markersIn = %v", got)
	}
}
