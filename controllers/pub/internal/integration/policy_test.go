package integration

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// pub-controller's pods patch (RBAC) is pinned by the ValidatingAdmissionPolicy
// in deploy/components/pub/policy.yaml to the related-pub annotations: the
// patch the reconciler sends is admitted, one touching anything else of the
// pod is refused. The writes impersonate pub-controller's ServiceAccount with
// the admin's system:masters group, so RBAC admits them and only the policy
// decides.
func TestControllerPodPatchIsPinnedToRelatedPub(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	env.ApplyPolicies(t, "deploy/components/pub/policy.yaml")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"team": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.local/web:v1"}}},
	}
	_, err := env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	kube := kubernetes.NewForConfigOrDie(env.ActingAs("system:serviceaccount:flotilla-system:pub-controller", nil))
	patch := func(p string) error {
		_, err := kube.CoreV1().Pods(ns).Patch(context.Background(), pod.Name, types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	// Each attempt changes the pod (attempt n writes its own value): a
	// patch the API server admitted before the policy was loaded would
	// otherwise make every later attempt a no-op that no policy refuses.
	attempt := 0
	refused := func(what, format, want string) {
		t.Helper()
		testenv.Refused(t, what, want, func() error { attempt++; return patch(fmt.Sprintf(format, attempt)) })
	}
	refused("another annotation", `{"metadata":{"annotations":{"team":"b-%d"}}}`, "only the related-pub annotations")
	refused("a new annotation", `{"metadata":{"annotations":{"x":"y-%d"}}}`, "only the related-pub annotations")
	refused("a label", `{"metadata":{"labels":{"app":"other-%d"}}}`, "labels, finalizers or owner references")
	// activeDeadlineSeconds may only decrease: each attempt lowers it.
	testenv.Refused(t, "the spec", "spec", func() error {
		attempt++
		return patch(fmt.Sprintf(`{"spec":{"activeDeadlineSeconds":%d}}`, 100000-attempt))
	})
	// What markRelated sends (controllers/pub/internal/controller/sync.go) is admitted and changes those two
	// annotations only. The pod is read again first: the attempts above that the API server admitted before it
	// loaded the policy changed it (CI saw "team" at "b-2").
	before, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, patch(`{"metadata":{"annotations":{"pub.kruise.io/related-pub":"web","kruise.io/related-pub":"web"}}}`))
	got, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	want := maps.Clone(before.Annotations)
	want["pub.kruise.io/related-pub"], want["kruise.io/related-pub"] = "web", "web"
	require.Equal(t, want, got.Annotations)
	require.Equal(t, before.Labels, got.Labels)
}
