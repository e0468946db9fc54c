package webhook

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func ws(name, ns, apiVersion, kind, target string, max ...string) *appsv1alpha1.WorkloadSpread {
	w := &appsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1alpha1.WorkloadSpreadSpec{
		TargetReference: &appsv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: target}}}
	for i, m := range max {
		s := appsv1alpha1.WorkloadSpreadSubset{Name: string(rune('a' + i))}
		if m != "" {
			v := intstr.Parse(m)
			s.MaxReplicas = &v
		}
		w.Spec.Subsets = append(w.Spec.Subsets, s)
	}
	return w
}

func TestValidate(t *testing.T) {
	other := ws("other", "ns", "apps/v1", "Deployment", "web", "")
	cases := []struct {
		name   string
		ws     *appsv1alpha1.WorkloadSpread
		others []*appsv1alpha1.WorkloadSpread
		want   string // "" valid
	}{
		{name: "percents up to 100", ws: ws("w", "ns", "apps/v1", "Deployment", "x", "40%", "60%", "")},
		{name: "percents over 100", ws: ws("w", "ns", "apps/v1", "Deployment", "x", "60%", "50%"),
			want: "spec.subsets[1].maxReplicas: Invalid value: \"50%\": the sum of all subset's maxReplicas exceeds 100% is no permitted"},
		{name: "integers are not summed", ws: ws("w", "ns", "apps/v1", "Deployment", "x", "60", "50")},
		{name: "same target as another", ws: ws("w", "ns", "apps/v1", "Deployment", "web", ""), others: []*appsv1alpha1.WorkloadSpread{other},
			want: "spec.targetRef: Invalid value: \"Deployment/web\": ws.spec.targetRef is in conflict with other WorkloadSpread other"},
		{name: "same target, other version of the group", ws: ws("w", "ns", "apps/v1beta2", "Deployment", "web", ""), others: []*appsv1alpha1.WorkloadSpread{other},
			want: "in conflict with other WorkloadSpread other"},
		{name: "itself (update)", ws: ws("other", "ns", "apps/v1", "Deployment", "web", ""), others: []*appsv1alpha1.WorkloadSpread{other}},
		{name: "another name", ws: ws("w", "ns", "apps/v1", "Deployment", "api", ""), others: []*appsv1alpha1.WorkloadSpread{other}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(tc.ws, tc.others)
			if tc.want == "" {
				assert.Empty(t, errs)
				return
			}
			assert.Contains(t, errs.ToAggregate().Error(), tc.want)
		})
	}
}

func TestScopes(t *testing.T) {
	create, del, evict := Scopes(nil)
	for _, s := range []kitwebhook.Scope{create, del, evict} {
		assert.Equal(t, kitwebhook.Never, s.MatchConditions[0].Expression, "no WorkloadSpread: never called")
	}
	gone := ws("gone", "b", "apps/v1", "Deployment", "x", "")
	gone.DeletionTimestamp = &metav1.Time{}
	create, del, evict = Scopes([]*appsv1alpha1.WorkloadSpread{
		ws("d", "a", "apps/v1", "Deployment", "web", ""), ws("c", "a", "apps.kruise.io/v1alpha1", "CloneSet", "cs", ""), gone})
	e := create.MatchConditions[0].Expression
	for _, want := range []string{`request.namespace == "a"`, `r.kind == "ReplicaSet"`, `r.name.startsWith("web-")`, `r.kind == "CloneSet"`,
		`r.apiVersion.startsWith("apps.kruise.io/")`, `r.name == "cs"`} {
		assert.True(t, strings.Contains(e, want), "creation scope %q lacks %q", e, want)
	}
	assert.NotContains(t, e, `"b"`, "a WorkloadSpread being deleted is out of scope")
	assert.Contains(t, del.MatchConditions[0].Expression, `"apps.kruise.io/matched-workloadspread" in oldObject.metadata.annotations`)
	assert.Equal(t, `request.namespace == "a"`, evict.MatchConditions[0].Expression)
}
