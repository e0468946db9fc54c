package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func newBudget(name string, age time.Duration, mutate func(*policyv1alpha1.PodUnavailableBudget)) *policyv1alpha1.PodUnavailableBudget {
	p := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age))}}
	mutate(p)
	return p
}

func ref(apiVersion, kind, name string) func(*policyv1alpha1.PodUnavailableBudget) {
	return func(p *policyv1alpha1.PodUnavailableBudget) {
		p.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
	}
}

func sel(s *metav1.LabelSelector) func(*policyv1alpha1.PodUnavailableBudget) {
	return func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.Selector = s }
}

func matchLabels(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func TestConflicts(t *testing.T) {
	web := ref("apps.kruise.io/v1alpha1", "CloneSet", "web")
	terminating := func(p *policyv1alpha1.PodUnavailableBudget) {
		web(p)
		p.DeletionTimestamp = &metav1.Time{}
	}
	cases := []struct {
		name   string
		pub    *policyv1alpha1.PodUnavailableBudget
		others []*policyv1alpha1.PodUnavailableBudget
		want   string // substring of the error; "" for none
	}{
		{"same workload", newBudget("new", 0, web), []*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, web)},
			"spec.targetRef: Invalid value: \"CloneSet web\": PodUnavailableBudget ns/old already protects"},
		{"same workload at another version", newBudget("new", 0, ref("apps.kruise.io/v1beta1", "CloneSet", "web")),
			[]*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, web)}, "ns/old"},
		{"the oldest is named", newBudget("new", 0, web),
			[]*policyv1alpha1.PodUnavailableBudget{newBudget("b", time.Minute, web), newBudget("a", time.Hour, web)}, "ns/a already"},
		{"other kind", newBudget("new", 0, ref("apps/v1", "Deployment", "web")), []*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, web)}, ""},
		{"other group", newBudget("new", 0, ref("apps/v1", "StatefulSet", "web")),
			[]*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, ref("apps.kruise.io/v1beta1", "StatefulSet", "web"))}, ""},
		{"other name", newBudget("new", 0, ref("apps.kruise.io/v1alpha1", "CloneSet", "api")), []*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, web)}, ""},
		{"itself", newBudget("old", 0, web), []*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, web)}, ""},
		{"being deleted", newBudget("new", 0, web), []*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, terminating)}, ""},
		{"targetRef and selector are not compared", newBudget("new", 0, sel(matchLabels("app", "web"))),
			[]*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, web)}, ""},
		{"same selector", newBudget("new", 0, sel(matchLabels("app", "web"))),
			[]*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, sel(matchLabels("app", "web")))}, "spec.selector: Invalid value: \"app=web\": PodUnavailableBudget ns/old"},
		{"same keys, a common value", newBudget("new", 0, sel(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}})),
			[]*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, sel(matchLabels("app", "web")))}, "ns/old"},
		{"same keys, disjoint values", newBudget("new", 0, sel(matchLabels("app", "api"))),
			[]*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, sel(matchLabels("app", "web")))}, ""},
		{"different keys", newBudget("new", 0, sel(matchLabels("app", "web", "tier", "front"))),
			[]*policyv1alpha1.PodUnavailableBudget{newBudget("old", time.Hour, sel(matchLabels("app", "web")))}, ""},
	}
	for _, c := range cases {
		got := Conflicts(c.pub, c.others).ToAggregate()
		switch {
		case c.want == "" && got != nil:
			t.Errorf("%s: unexpected conflict: %v", c.name, got)
		case c.want != "" && (got == nil || !strings.Contains(got.Error(), c.want)):
			t.Errorf("%s: got %v, want an error containing %q", c.name, got, c.want)
		}
	}
}

func pubRequest(t *testing.T, op admissionv1.Operation, resource string, p *policyv1alpha1.PodUnavailableBudget) kitwebhook.Request {
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return kitwebhook.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: "ns", Name: p.Name, Object: runtime.RawExtension{Raw: raw},
		Resource: metav1.GroupVersionResource{Group: policyv1alpha1.SchemeGroupVersion.Group, Version: "v1alpha1", Resource: resource},
	}}
}

func TestValidatePub(t *testing.T) {
	web := ref("apps.kruise.io/v1alpha1", "CloneSet", "web")
	v := &Validator{Client: fake.NewSimpleClientset(newBudget("old", time.Hour, web))}
	ctx := context.Background()

	r := v.ValidatePub(ctx, pubRequest(t, admissionv1.Create, "podunavailablebudgets", newBudget("new", 0, web)))
	if r.Allowed || r.Result.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Result.Message, "ns/old") {
		t.Errorf("second budget for CloneSet web: got %+v, want 422 naming ns/old", r.Result)
	}
	if r := v.ValidatePub(ctx, pubRequest(t, admissionv1.Update, "podunavailablebudgets", newBudget("new", 0, web))); !r.Allowed {
		t.Errorf("an update is not checked (selector and targetRef are immutable): %+v", r.Result)
	}
	if r := v.ValidatePub(ctx, pubRequest(t, admissionv1.Create, "podunavailablebudgets", newBudget("api", 0, ref("apps.kruise.io/v1alpha1", "CloneSet", "api")))); !r.Allowed {
		t.Errorf("a budget for another workload: %+v", r.Result)
	}
	if r := v.ValidatePub(ctx, pubRequest(t, admissionv1.Create, "pods", newBudget("x", 0, web))); r.Allowed || r.Result.Code != http.StatusBadRequest {
		t.Errorf("a request for another resource is an error, not a decision: %+v", r)
	}
}
