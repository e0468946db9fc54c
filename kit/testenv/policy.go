package testenv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
)

// policyWait bounds how long the API server may take to load a policy.
const policyWait = 90 * time.Second

// ApplyPolicies server-side applies the ValidatingAdmissionPolicies and
// bindings of file (relative to the repository root: the objects an overlay
// installs), waits until the API server has type-checked each policy's
// current generation, and fails on a type error in one of its expressions.
func (e *Env) ApplyPolicies(t testing.TB, file string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(e.RepoRoot, file))
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	resources := map[string]string{"ValidatingAdmissionPolicy": "validatingadmissionpolicies", "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings"}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var policies []string
	for {
		var o unstructured.Unstructured
		if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("testenv: decode %s: %v", file, err)
		}
		if len(o.Object) == 0 {
			continue
		}
		resource, ok := resources[o.GetKind()]
		if !ok {
			t.Fatalf("testenv: %s in %s is not an admission policy", o.GetKind(), file)
		}
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: resource}
		if _, err := e.Dynamic().Resource(gvr).Apply(context.Background(), o.GetName(), &o, metav1.ApplyOptions{FieldManager: "flotilla-test", Force: true}); err != nil {
			t.Fatalf("testenv: apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if o.GetKind() == "ValidatingAdmissionPolicy" {
			policies = append(policies, o.GetName())
		}
	}
	for _, n := range policies {
		Eventually(t, policyWait, func() (bool, error) {
			p, err := e.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(context.Background(), n, metav1.GetOptions{})
			if err != nil || p.Status.ObservedGeneration != p.Generation {
				return false, err
			}
			if tc := p.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) > 0 {
				t.Fatalf("testenv: policy %s: type errors %+v", n, tc.ExpressionWarnings)
			}
			return true, nil
		})
	}
}

// ActingAs returns a client config impersonating user (with extra). It keeps
// the admin's system:masters group, so RBAC lets every request through and
// only admission decides: what a test of it checks is the policy.
func (e *Env) ActingAs(user string, extra map[string][]string) *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}, Extra: extra}
	return cfg
}

// Refused polls write until admission refuses it (403) with a message
// containing want — the API server loads a policy, and each new version of
// it, a moment after it is written — and logs the refusal.
func Refused(t testing.TB, what, want string, write func() error) {
	t.Helper()
	var last error
	Eventually(t, policyWait, func() (bool, error) {
		last = write()
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), want), nil
	})
	t.Logf("%s: %v", what, last)
}
