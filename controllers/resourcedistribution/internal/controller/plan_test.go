package controller

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func nsList(names ...string) []appsv1alpha1.ResourceDistributionNamespace {
	out := make([]appsv1alpha1.ResourceDistributionNamespace, 0, len(names))
	for _, n := range names {
		out = append(out, appsv1alpha1.ResourceDistributionNamespace{Name: n})
	}
	return out
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestTargetNamespaces(t *testing.T) {
	nss := []*corev1.Namespace{
		namespace("a", map[string]string{"team": "x"}),
		namespace("b", map[string]string{"team": "y"}),
		namespace("c", nil),
		namespace("kube-system", nil),
	}
	cases := []struct {
		name    string
		targets appsv1alpha1.ResourceDistributionTargets
		want    []string
	}{
		{"nothing selected", appsv1alpha1.ResourceDistributionTargets{}, []string{}},
		{"included, one missing", appsv1alpha1.ResourceDistributionTargets{
			IncludedNamespaces: appsv1alpha1.ResourceDistributionTargetNamespaces{List: nsList("a", "gone")}}, []string{"a", "gone"}},
		{"selector", appsv1alpha1.ResourceDistributionTargets{
			NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}}, []string{"a"}},
		{"all, kube-system included as in OpenKruise v1.9", appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true},
			[]string{"a", "b", "c", "kube-system"}},
		{"all minus excluded", appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true,
			ExcludedNamespaces: appsv1alpha1.ResourceDistributionTargetNamespaces{List: nsList("kube-system", "b")}}, []string{"a", "c"}},
		{"union of included and selector, excluded wins", appsv1alpha1.ResourceDistributionTargets{
			IncludedNamespaces:     appsv1alpha1.ResourceDistributionTargetNamespaces{List: nsList("c")},
			NamespaceLabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpExists}}},
			ExcludedNamespaces:     appsv1alpha1.ResourceDistributionTargetNamespaces{List: nsList("b")}}, []string{"a", "c"}},
		{"all and included together is the union", appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true,
			IncludedNamespaces: appsv1alpha1.ResourceDistributionTargetNamespaces{List: nsList("new")}}, []string{"a", "b", "c", "kube-system", "new"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := newTargetSelector(&tc.targets)
			require.NoError(t, err)
			assert.Equal(t, tc.want, sel.targetNamespaces(nss))
		})
	}
}

func rdWith(t *testing.T, resource any) *appsv1alpha1.ResourceDistribution {
	t.Helper()
	raw, err := json.Marshal(resource)
	require.NoError(t, err)
	return &appsv1alpha1.ResourceDistribution{
		ObjectMeta: metav1.ObjectMeta{Name: "rd", UID: types.UID("rd-uid"), Generation: 3},
		Spec:       appsv1alpha1.ResourceDistributionSpec{Resource: runtime.RawExtension{Raw: raw}},
	}
}

func secretSource() map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "creds", "labels": map[string]any{"app": "x"}, "annotations": map[string]any{"note": "n"}},
		"stringData": map[string]any{"user": "admin"}, "data": map[string]any{"pw": "c2VjcmV0"}}
}

func TestParseSource(t *testing.T) {
	cases := []struct {
		name     string
		resource any
		wantErr  string
	}{
		{"secret", secretSource(), ""},
		{"configmap", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg"}}, ""},
		{"unsupported kind", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"}}, "unsupported resource kind"},
		{"no name", map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}, "metadata.name is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSource(rdWith(t, tc.resource))
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
	src, err := parseSource(rdWith(t, secretSource()))
	require.NoError(t, err)
	sec := src.obj.(*corev1.Secret)
	assert.Equal(t, map[string][]byte{"user": []byte("admin"), "pw": []byte("secret")}, sec.Data, "stringData folds into data as the API server stores it")
	assert.Equal(t, corev1.SecretTypeOpaque, sec.Type)
	assert.Len(t, src.hash, 64)
}

// TestCopyDiff: a copy is written only when it differs from what it should be.
func TestCopyDiff(t *testing.T) {
	rd := rdWith(t, secretSource())
	src, err := parseSource(rd)
	require.NoError(t, err)
	want := newDesiredMeta(rd, src)
	fresh := newCopy(src, "ns1", want).(*corev1.Secret)
	assert.Equal(t, map[string]string{"app": "x", CopyLabel: "true"}, fresh.Labels)
	assert.Equal(t, src.hash, fresh.Annotations[appsv1alpha1.ResourceDistributionHashAnnotation])
	assert.Equal(t, "rd", fresh.Annotations[appsv1alpha1.ResourceDistributionSourceAnnotation])
	assert.Equal(t, "n", fresh.Annotations["note"])
	require.Len(t, fresh.OwnerReferences, 1)
	assert.True(t, *fresh.OwnerReferences[0].Controller)
	assert.Equal(t, "apps.kruise.io/v1alpha1", fresh.OwnerReferences[0].APIVersion)

	cases := []struct {
		name   string
		mutate func(s *corev1.Secret)
		want   bool
	}{
		{"up to date", func(*corev1.Secret) {}, false},
		{"extra label and annotation kept, not a change", func(s *corev1.Secret) { s.Labels["other"] = "1"; s.Annotations["other"] = "1" }, false},
		{"data edited", func(s *corev1.Secret) { s.Data["pw"] = []byte("changed") }, true},
		{"key added", func(s *corev1.Secret) { s.Data["extra"] = []byte("x") }, true},
		{"old hash", func(s *corev1.Secret) { s.Annotations[appsv1alpha1.ResourceDistributionHashAnnotation] = "old" }, true},
		{"copy label removed", func(s *corev1.Secret) { delete(s.Labels, CopyLabel) }, true},
		{"source label changed", func(s *corev1.Secret) { s.Labels["app"] = "y" }, true},
		{"controller of an earlier distribution of the same name", func(s *corev1.Secret) { s.OwnerReferences[0].UID = "old-uid" }, true},
		{"type changed", func(s *corev1.Secret) { s.Type = corev1.SecretTypeDockerConfigJson }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			existing := fresh.DeepCopy()
			tc.mutate(existing)
			assert.Equal(t, tc.want, needsUpdate(existing, src.obj, want))
			if tc.want {
				upd := updatedCopy(existing, src.obj, want)
				assert.False(t, needsUpdate(upd, src.obj, want), "the update brings it up to date")
				require.Len(t, upd.GetOwnerReferences(), 1)
				assert.Equal(t, rd.UID, upd.GetOwnerReferences()[0].UID)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	rd := rdWith(t, secretSource())
	src, err := parseSource(rd)
	require.NoError(t, err)
	want := newDesiredMeta(rd, src)
	upToDate := func(ns string) *corev1.Secret { return newCopy(src, ns, want).(*corev1.Secret) }
	stale := upToDate("stale")
	stale.Data["pw"] = []byte("old")
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "foreign", Labels: map[string]string{CopyLabel: "true"}}}
	pendingCopy := upToDate("pending")
	pendingCopy.Data["pw"] = []byte("old")
	leftover := upToDate("left")
	leftInTerminating := upToDate("dying")
	now := metav1.Now()
	cache := map[string]metav1.Object{"ok": upToDate("ok"), "stale": stale, "foreign": foreign, "pending": pendingCopy,
		"left": leftover, "dying": leftInTerminating}
	nss := map[string]*corev1.Namespace{}
	for _, n := range []string{"ok", "stale", "foreign", "pending", "new", "left"} {
		nss[n] = namespace(n, nil)
	}
	nss["terminating"] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "terminating", DeletionTimestamp: &now}}
	nss["dying"] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dying", DeletionTimestamp: &now}}
	in := planInput{
		rdName: "rd", src: src, want: want, namespaces: nss,
		targets: []string{"foreign", "missing", "new", "ok", "pending", "stale", "terminating"},
		cached:  func(ns string) metav1.Object { return cache[ns] },
		owned:   []metav1.Object{cache["ok"], stale, pendingCopy, leftover, leftInTerminating},
		pending: func(o metav1.Object) bool { return o.GetNamespace() == "pending" },
	}
	got := map[string]op{}
	for _, a := range plan(in) {
		got[a.ns] = a.op
	}
	assert.Equal(t, map[string]op{
		"foreign": opConflict, "missing": opNotExist, "new": opCreate, "ok": opNone, "pending": opWait,
		"stale": opUpdate, "terminating": opNotExist, "left": opDelete,
	}, got)
}

func TestLimitWrites(t *testing.T) {
	actions := []action{{ns: "a", op: opCreate}, {ns: "b", op: opNone}, {ns: "c", op: opUpdate}, {ns: "d", op: opDelete}, {ns: "e", op: opConflict}}
	assert.True(t, limitWrites(actions, 2))
	ops := []op{}
	for _, a := range actions {
		ops = append(ops, a.op)
	}
	assert.Equal(t, []op{opCreate, opNone, opUpdate, opWait, opConflict}, ops)
	assert.False(t, limitWrites([]action{{op: opCreate}}, 2))
}
