package testenv

// Faults a test injects to see what a controller does with a cluster that
// misbehaves: an admission policy refusing writes, a pod status as a
// crashed writer left it.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// DenyPodImage makes the API server refuse, in namespace ns only, to create
// or update a pod (the pod itself, not its status) with a container running
// image: a ValidatingAdmissionPolicy and its binding, as a cluster's image
// policy would. It returns once the API server enforces them (they take
// effect asynchronously) and removes them at the end of the test. The
// denial message contains the returned string.
func (e *Env) DenyPodImage(t testing.TB, ns, image string) (message string) {
	t.Helper()
	ctx := context.Background()
	name := "flotilla-test-deny-image-" + ns
	message = fmt.Sprintf("image %s is not allowed in namespace %s (test policy)", image, ns)
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf("object.spec.containers.all(c, c.image != %q)", image),
				Message:    message,
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
			}},
		},
	}
	api := e.Kube.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("testenv: create ValidatingAdmissionPolicy: %v", err)
	}
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("testenv: create ValidatingAdmissionPolicyBinding: %v", err)
	}
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	// Enforced once a dry-run creation of such a pod is denied.
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-image-probe", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: image}}},
	}
	Eventually(t, 30*time.Second, func() (bool, error) {
		_, err := e.Kube.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), message), nil
	})
	return message
}

// PatchPodStatus applies a strategic merge patch to a pod's status (e.g. a
// condition as a controller that crashed mid-change left it; conditions
// merge by type).
func (e *Env) PatchPodStatus(t testing.TB, ns, name, patch string) *corev1.Pod {
	t.Helper()
	p, err := e.Kube.CoreV1().Pods(ns).Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("testenv: patch status of pod %s: %v", name, err)
	}
	return p
}

// StrandInPlaceUpdate leaves pod name as an in-place update interrupted
// between its two writes leaves it (a controller that crashed or lost its
// Lease after kit/inplace.Update's status write, before the pod write):
// InPlaceUpdateReady False (reason StartInPlaceUpdate) and Ready False, its
// images and annotations untouched.
func (e *Env) StrandInPlaceUpdate(t testing.TB, ns, name string) *corev1.Pod {
	t.Helper()
	now := time.Now().UTC().Format(time.RFC3339)
	return e.PatchPodStatus(t, ns, name, fmt.Sprintf(`{"status":{"conditions":[`+
		`{"type":%q,"status":"False","reason":"StartInPlaceUpdate","lastTransitionTime":%q},`+
		`{"type":"Ready","status":"False","reason":"ReadinessGatesNotReady","lastTransitionTime":%q}]}}`,
		pub.InPlaceUpdateReady, now, now))
}

// InServiceUnwritten returns an error unless every pod of now is one of
// before (same UID), not written since (same resourceVersion), Ready and
// with InPlaceUpdateReady True: what a refused in-place update must leave.
func InServiceUnwritten(before, now []corev1.Pod) error {
	was := make(map[types.UID]string, len(before))
	for _, p := range before {
		was[p.UID] = p.ResourceVersion
	}
	for _, p := range now {
		rv, ok := was[p.UID]
		if !ok || p.ResourceVersion != rv || !PodReady(&p) || ConditionStatus(&p, pub.InPlaceUpdateReady) != corev1.ConditionTrue {
			return fmt.Errorf("pod %s replaced or written (rv %s → %s), ready=%v, InPlaceUpdateReady=%s",
				p.Name, rv, p.ResourceVersion, PodReady(&p), ConditionStatus(&p, pub.InPlaceUpdateReady))
		}
	}
	return nil
}
