package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
	applyPolicyFile(t, env, "deploy/components/pub/policy.yaml")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"team": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.local/web:v1"}}},
	}
	_, err := env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:flotilla-system:pub-controller", Groups: []string{"system:masters", "system:authenticated"}}
	kube := kubernetes.NewForConfigOrDie(cfg)
	patch := func(p string) error {
		_, err := kube.CoreV1().Pods(ns).Patch(context.Background(), pod.Name, types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	refused := func(what, p, want string) {
		t.Helper()
		var last error
		testenv.Eventually(t, waitTimeout, func() (bool, error) {
			last = patch(p)
			return apierrors.IsForbidden(last) && strings.Contains(last.Error(), want), nil
		})
		t.Logf("%s: %v", what, last)
	}
	refused("another annotation", `{"metadata":{"annotations":{"team":"b"}}}`, "only the related-pub annotations")
	refused("a new annotation", `{"metadata":{"annotations":{"x":"y"}}}`, "only the related-pub annotations")
	refused("a label", `{"metadata":{"labels":{"app":"other"}}}`, "labels, finalizers or owner references")
	refused("the spec", `{"spec":{"activeDeadlineSeconds":5}}`, "spec")
	// What markRelated sends (controllers/pub/internal/controller/sync.go).
	require.NoError(t, patch(`{"metadata":{"annotations":{"pub.kruise.io/related-pub":"web","kruise.io/related-pub":"web"}}}`))
	got, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "web", got.Annotations["kruise.io/related-pub"])
	require.Equal(t, "a", got.Annotations["team"])
}

// applyPolicyFile server-side applies the admission policies of file (the
// objects the overlays install) and fails on a type error the API server
// found in one of their expressions.
func applyPolicyFile(t *testing.T, env *testenv.Env, file string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(env.RepoRoot, file))
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var o unstructured.Unstructured
		if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		if len(o.Object) == 0 {
			continue
		}
		resource := map[string]string{"ValidatingAdmissionPolicy": "validatingadmissionpolicies", "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings"}[o.GetKind()]
		require.NotEmpty(t, resource, "%s: not an admission policy", o.GetKind())
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: resource}
		_, err := env.Dynamic().Resource(gvr).Apply(context.Background(), o.GetName(), &o, metav1.ApplyOptions{FieldManager: "flotilla-test", Force: true})
		require.NoError(t, err, "apply %s %s", o.GetKind(), o.GetName())
		if o.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		testenv.Eventually(t, waitTimeout, func() (bool, error) {
			p, err := env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(context.Background(), o.GetName(), metav1.GetOptions{})
			if err != nil || p.Status.ObservedGeneration != p.Generation {
				return false, err
			}
			if tc := p.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) > 0 {
				t.Fatalf("policy %s: type errors %+v", o.GetName(), tc.ExpressionWarnings)
			}
			return true, nil
		})
	}
}
