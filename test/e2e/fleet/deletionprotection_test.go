package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// deletionprotection-controller runs no reconciler (the webhook is all it is), so it is not in the controllers of
// TestEveryControllerStartsLeadsAndServes, which waits for workers: it must start under its own ServiceAccount with
// the gates its component sets, win its Lease, report healthy and ready (its webhook serving, which needs its
// certificate Secret and the caBundle write its RBAC allows) and serve metrics.
func TestDeletionProtectionControllerStartsAndServes(t *testing.T) {
	env := testenv.Get(t)
	f := newFleet(t, env)
	p := f.start(t, "deletionprotection", "--webhook-host=127.0.0.1", "--webhook-port=0",
		"--feature-gates=ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true")
	testenv.Eventually(t, time.Minute, func() (bool, error) { return p.Status("/healthz") == 200, nil })
	testenv.Eventually(t, time.Minute, func() (bool, error) { return p.Status("/readyz") == 200, nil })
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		holder, err := f.leaseHolder("deletionprotection")
		return holder != "", err
	})
	require.Contains(t, p.Metrics(t), "rest_client_requests_total", "client-go REST metrics are exported")
	require.True(t, p.Running(), "process exited; log:\n%s", p.Log())
}

// Its RBAC: list (no watch, no get, no write) wherever a Cascading namespace's or CRD's dependants can be; its own
// webhook configuration's caBundle and certificate Secret, nothing of another feature's.
func TestDeletionProtectionRBAC(t *testing.T) {
	env := testenv.Get(t)
	f := newFleet(t, env)
	kube := f.clientAs(t, "deletionprotection")
	cases := []struct {
		name    string
		attrs   authorizationv1.ResourceAttributes
		allowed bool
	}{
		{"list pods everywhere", authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}, true},
		{"list claims", authorizationv1.ResourceAttributes{Verb: "list", Resource: "persistentvolumeclaims", Namespace: "default"}, true},
		{"list a CRD's objects", authorizationv1.ResourceAttributes{Verb: "list", Group: "example.com", Resource: "widgets"}, true},
		{"no watch", authorizationv1.ResourceAttributes{Verb: "watch", Resource: "pods"}, false},
		{"no get", authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Name: "any", Namespace: "default"}, false},
		{"no delete", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "namespaces", Name: "default"}, false},
		{"no pod writes", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Namespace: "default"}, false},
		{"own caBundle", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "flotilla-deletionprotection"}, true},
		{"not pub's", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "flotilla-pub"}, false},
		{"not its policies", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies", Name: "flotilla-deletionprotection-always"}, false},
		{"own certificates", authorizationv1.ResourceAttributes{Verb: "update", Resource: "secrets", Name: "deletionprotection-controller-webhook-certs", Namespace: framework.SystemNamespace}, true},
		{"not pub's certificates", authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Name: "pub-controller-webhook-certs", Namespace: framework.SystemNamespace}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &tc.attrs}},
				metav1.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, tc.allowed, review.Status.Allowed, "reason: %s", review.Status.Reason)
		})
	}
}
