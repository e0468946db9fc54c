package inplace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func barrier(p string) corev1.EnvVar {
	return corev1.EnvVar{Name: "KRUISE_CONTAINER_BARRIER", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "p-barrier"}, Key: p},
	}}
}

func TestContainerPriorities(t *testing.T) {
	tests := []struct {
		name string
		pod  func() *corev1.Pod
		want []Priority
	}{
		{"env priorities, missing counts as 0",
			func() *corev1.Pod { return simplePod([2]string{"a", "10"}, [2]string{"b", ""}, [2]string{"c", "-5"}) },
			[]Priority{{10, true}, {0, true}, {-5, true}}},
		{"all equal: none",
			func() *corev1.Pod { return simplePod([2]string{"a", "3"}, [2]string{"b", "3"}) },
			[]Priority{{}, {}}},
		{"all zero: none",
			func() *corev1.Pod { return simplePod([2]string{"a", "0"}, [2]string{"b", ""}) },
			[]Priority{{}, {}}},
		{"unparsable value: none",
			func() *corev1.Pod { return simplePod([2]string{"a", "high"}, [2]string{"b", "1"}) },
			[]Priority{{}, {}}},
		{"Ordered annotation wins over env",
			func() *corev1.Pod {
				p := simplePod([2]string{"a", ""}, [2]string{"b", "100"}, [2]string{"c", ""})
				p.Annotations = map[string]string{"apps.kruise.io/container-launch-priority": "Ordered"}
				return p
			},
			[]Priority{{0, true}, {-1, true}, {-2, true}}},
		{"Ordered with one container: none",
			func() *corev1.Pod {
				p := simplePod([2]string{"a", ""})
				p.Annotations = map[string]string{"apps.kruise.io/container-launch-priority": "Ordered"}
				return p
			},
			[]Priority{{}}},
		{"other annotation value: ignored",
			func() *corev1.Pod {
				p := simplePod([2]string{"a", ""}, [2]string{"b", ""})
				p.Annotations = map[string]string{"apps.kruise.io/container-launch-priority": "ordered"}
				return p
			},
			[]Priority{{}, {}}},
		{"injected barrier is authoritative; a container without it has none",
			func() *corev1.Pod {
				p := simplePod([2]string{"a", "1"}, [2]string{"b", "2"}, [2]string{"late", "9"})
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, barrier("p_-3"))
				p.Spec.Containers[1].Env = append(p.Spec.Containers[1].Env, barrier("p_7"))
				return p
			},
			[]Priority{{-3, true}, {7, true}, {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ContainerPriorities(tt.pod()))
		})
	}
}

func TestBatches(t *testing.T) {
	annotationRef := func(keys ...string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Annotations: map[string]string{}}
		for _, k := range keys {
			m.Annotations[k] = "v2"
		}
		return m
	}
	tests := []struct {
		name        string
		pod         func() *corev1.Pod
		spec        Spec
		first, next []string
	}{
		{
			name: "env priority: highest first, same priority together",
			pod: func() *corev1.Pod {
				return simplePod([2]string{"a", "1"}, [2]string{"b", "5"}, [2]string{"c", "5"}, [2]string{"d", "-1"})
			},
			spec:  images("a", "b", "c", "d"),
			first: []string{"b", "c"},
			next:  []string{"a", "d"},
		},
		{
			name:  "only changed containers count: the highest changed one goes first",
			pod:   func() *corev1.Pod { return simplePod([2]string{"a", "1"}, [2]string{"b", "5"}, [2]string{"c", "-1"}) },
			spec:  images("a", "c"),
			first: []string{"a"},
			next:  []string{"c"},
		},
		{
			name: "Ordered annotation: spec order",
			pod: func() *corev1.Pod {
				p := simplePod([2]string{"z", ""}, [2]string{"y", ""}, [2]string{"x", ""})
				p.Annotations = map[string]string{"apps.kruise.io/container-launch-priority": "Ordered"}
				return p
			},
			spec:  images("x", "y", "z"),
			first: []string{"z"},
			next:  []string{"x", "y"},
		},
		{
			name:  "no priorities: all at once",
			pod:   func() *corev1.Pod { return simplePod([2]string{"a", ""}, [2]string{"b", ""}, [2]string{"c", ""}) },
			spec:  images("a", "b", "c"),
			first: []string{"a", "b", "c"},
		},
		{
			name:  "no priorities, spec order differs from name order: sorted by name",
			pod:   func() *corev1.Pod { return simplePod([2]string{"c", ""}, [2]string{"a", ""}, [2]string{"b", ""}) },
			spec:  images("a", "b", "c"),
			first: []string{"a", "b", "c"},
		},
		{
			name: "container without priority goes first",
			pod: func() *corev1.Pod {
				p := simplePod([2]string{"a", ""}, [2]string{"b", ""}, [2]string{"late", ""})
				p.Spec.Containers[0].Env = []corev1.EnvVar{barrier("p_0")}
				p.Spec.Containers[1].Env = []corev1.EnvVar{barrier("p_-1")}
				return p
			},
			spec:  images("b", "late"),
			first: []string{"b", "late"},
		},
		{
			name: "shared metadata key pulls a lower-priority container into the batch, transitively",
			pod: func() *corev1.Pod {
				return simplePod([2]string{"a", "3"}, [2]string{"b", "2"}, [2]string{"c", "1"}, [2]string{"d", "0"}, [2]string{"e", "-1"})
			},
			spec: Spec{
				ContainerImages: map[string]string{"e": "e:v2"},
				ContainerRefMetadata: map[string]metav1.ObjectMeta{
					"a": annotationRef("k1"),
					"c": annotationRef("k1", "k2"),               // shares k1 with a
					"d": annotationRef("k2"),                     // shares k2 with c
					"b": {Labels: map[string]string{"k1": "v2"}}, // a label, not the annotation k1
				},
			},
			first: []string{"a", "c", "d"},
			next:  []string{"b", "e"},
		},
		{
			name:  "containers the pod does not have are ignored",
			pod:   func() *corev1.Pod { return simplePod([2]string{"a", "1"}, [2]string{"b", "2"}) },
			spec:  images("a", "ghost"),
			first: []string{"a"},
		},
		{
			name: "nothing changed",
			pod:  func() *corev1.Pod { return simplePod([2]string{"a", "1"}, [2]string{"b", "2"}) },
			spec: Spec{Metadata: MetadataChange{Labels: map[string]string{"x": "y"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod()
			before := pod.DeepCopy()
			specBefore := tt.spec.DeepCopy()
			first, next := Batches(pod, tt.spec)
			assert.Equal(t, tt.first, first, "first")
			assert.Equal(t, tt.next, next, "next")
			assert.Equal(t, before, pod, "pod modified")
			assert.Equal(t, specBefore, tt.spec, "spec modified")
		})
	}
}
