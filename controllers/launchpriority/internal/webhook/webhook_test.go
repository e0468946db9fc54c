package webhook

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func request(t *testing.T, op admissionv1.Operation, pod *corev1.Pod) kitwebhook.Request {
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	return kitwebhook.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "1", Operation: op, Object: runtime.RawExtension{Raw: raw}}}
}

func TestMutatePod(t *testing.T) {
	twoContainers := func(annotations map[string]string, env ...corev1.EnvVar) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: annotations},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b", Env: env}}}}
	}
	ordered := map[string]string{"apps.kruise.io/container-launch-priority": "Ordered"}
	for _, tc := range []struct {
		name    string
		op      admissionv1.Operation
		pod     *corev1.Pod
		allowed bool
		barrier []string // each container's barrier key after the patch (nil: no patch)
		message string
	}{
		{"Ordered: barrier env added to each container", admissionv1.Create, twoContainers(ordered), true,
			[]string{"p-barrier/p_0", "p-barrier/p_-1"}, ""},
		{"nothing asked: allowed unchanged", admissionv1.Create, twoContainers(nil), true, nil, ""},
		{"update: never mutated", admissionv1.Update, twoContainers(ordered), true, nil, ""},
		{"bad priority: refused naming the field", admissionv1.Create,
			twoContainers(nil, corev1.EnvVar{Name: "KRUISE_CONTAINER_PRIORITY", Value: "x"}), false, nil,
			`pod p: spec.containers[1].env[0].value: Invalid value: "x": KRUISE_CONTAINER_PRIORITY must be an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := MutatePod(context.Background(), request(t, tc.op, tc.pod))
			assert.Equal(t, tc.allowed, r.Allowed)
			assert.Equal(t, tc.barrier, patchedBarriers(t, r.Patch))
			if tc.message != "" {
				require.NotNil(t, r.Result)
				assert.Equal(t, tc.message, r.Result.Message)
				assert.EqualValues(t, 422, r.Result.Code)
			}
		})
	}
}

// patchedBarriers returns each container's barrier "<configmap>/<key>" as the JSON patch sets the containers (nil
// when it does not touch them).
func patchedBarriers(t *testing.T, patch []byte) []string {
	if len(patch) == 0 {
		return nil
	}
	var ops []struct {
		Op, Path string
		Value    json.RawMessage
	}
	require.NoError(t, json.Unmarshal(patch, &ops))
	var out []string
	for _, op := range ops {
		require.Equal(t, "/spec/containers", op.Path, "the patch changes only the containers")
		var cs []corev1.Container
		require.NoError(t, json.Unmarshal(op.Value, &cs))
		for _, c := range cs {
			for _, e := range c.Env {
				if e.Name == "KRUISE_CONTAINER_BARRIER" {
					out = append(out, e.ValueFrom.ConfigMapKeyRef.Name+"/"+e.ValueFrom.ConfigMapKeyRef.Key)
				}
			}
		}
	}
	return out
}
