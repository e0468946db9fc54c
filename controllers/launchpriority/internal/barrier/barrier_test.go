package barrier

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func container(name string, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: name, Env: env}
}

func prio(v string) corev1.EnvVar {
	return corev1.EnvVar{Name: pub.ContainerLaunchPriorityEnvName, Value: v}
}

func pod(annotations map[string]string, cs ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: annotations}, Spec: corev1.PodSpec{Containers: cs}}
}

var ordered = map[string]string{pub.ContainerLaunchPriorityKey: pub.ContainerLaunchOrdered}

// barrierKeys returns, per container, the key of its barrier env ("" when it has none) and how many it has.
func barrierKeys(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		key := ""
		for _, e := range c.Env {
			if e.Name == pub.ContainerLaunchBarrierEnvName {
				if key != "" {
					key += ",dup"
				}
				key += e.ValueFrom.ConfigMapKeyRef.Key + "@" + e.ValueFrom.ConfigMapKeyRef.Name
			}
		}
		out = append(out, key)
	}
	return out
}

func TestInject(t *testing.T) {
	gen := func(base string) string { return base + "xyz" }
	withBarrier := pod(ordered, container("a", Env("p", 0)), container("b", Env("p", -1)))
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		changed bool
		want    []string
	}{
		{"ordered: first container highest", pod(ordered, container("a"), container("b"), container("c")), true,
			[]string{"p_0@p-barrier", "p_-1@p-barrier", "p_-2@p-barrier"}},
		{"ordered with one container: nothing", pod(ordered, container("a")), false, []string{""}},
		{"env priorities, missing env counts as 0", pod(nil, container("a"), container("b", prio("10"))), true,
			[]string{"p_0@p-barrier", "p_10@p-barrier"}},
		{"env priorities all equal: nothing", pod(nil, container("a", prio("3")), container("b", prio("3"))), false, []string{"", ""}},
		{"env priorities all 0: nothing", pod(nil, container("a", prio("0")), container("b")), false, []string{"", ""}},
		{"no annotation, no env: nothing", pod(nil, container("a"), container("b")), false, []string{"", ""}},
		{"already injected (reinvocation): left alone", withBarrier, false, []string{"p_0@p-barrier", "p_-1@p-barrier"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod.DeepCopy()
			assert.Equal(t, tc.changed, Inject(p, gen))
			assert.Equal(t, tc.want, barrierKeys(p))
		})
	}

	t.Run("generateName: the pod is named before the env names its barrier", func(t *testing.T) {
		p := pod(ordered, container("a"), container("b"))
		p.Name, p.GenerateName = "", "web-"
		assert.True(t, Inject(p, gen))
		assert.Equal(t, "web-xyz", p.Name)
		assert.Equal(t, []string{"p_0@web-xyz-barrier", "p_-1@web-xyz-barrier"}, barrierKeys(p))
	})
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"Ordered", pod(ordered, container("a"), container("b")), nil},
		{"unknown annotation value", pod(map[string]string{pub.ContainerLaunchPriorityKey: "ordered"}, container("a")),
			[]string{`metadata.annotations[apps.kruise.io/container-launch-priority]: Unsupported value: "ordered": supported values: "Ordered"`}},
		{"integer priorities at the bounds", pod(nil, container("a", prio("2147483647")), container("b", prio("-2147483647"))), nil},
		{"non-integer", pod(nil, container("a"), container("b", corev1.EnvVar{Name: "X"}, prio("high"))),
			[]string{`spec.containers[1].env[1].value: Invalid value: "high": KRUISE_CONTAINER_PRIORITY must be an integer`}},
		{"out of range", pod(nil, container("a", prio("2147483648")), container("b", prio("-2147483648"))),
			[]string{
				`spec.containers[0].env[0].value: Invalid value: "2147483648": KRUISE_CONTAINER_PRIORITY must be in [-2147483647, 2147483647]`,
				`spec.containers[1].env[0].value: Invalid value: "-2147483648": KRUISE_CONTAINER_PRIORITY must be in [-2147483647, 2147483647]`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range Validate(tc.pod) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestInScope(t *testing.T) {
	completed := map[string]string{pub.ContainerLaunchPriorityKey: pub.ContainerLaunchOrdered, CompletedKey: "true"}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"plain pod", pod(nil, container("a"), container("b")), false},
		{"Ordered annotation", pod(ordered, container("a"), container("b")), true},
		{"priority env", pod(nil, container("a"), container("b", prio("1"))), true},
		{"barrier env", pod(nil, container("a", Env("p", 0))), true},
		{"completed", pod(completed, container("a", Env("p", 0)), container("b", Env("p", -1))), false},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, InScope(tc.pod)) })
	}
}
