package webhook

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/pubcontrol"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func TestScopes(t *testing.T) {
	pod, evict := Scopes(nil)
	assert.Equal(t, kitwebhook.Never, pod.MatchConditions[0].Expression, "no budget: no call at all")
	assert.Equal(t, kitwebhook.Never, evict.MatchConditions[0].Expression)
	assert.Equal(t, RelatedCondition, pod.MatchConditions[1].Name)
	assert.Contains(t, pod.MatchConditions[1].Expression, `"kruise.io/related-pub" in oldObject.metadata.annotations`)

	gone := metav1.Now()
	pubs := []*policyv1alpha1.PodUnavailableBudget{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "x"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "z"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "t", DeletionTimestamp: &gone}},
	}
	pod, evict = Scopes(pubs)
	assert.Equal(t, `request.namespace in ["a", "b"]`, pod.MatchConditions[0].Expression)
	assert.Equal(t, pod.MatchConditions[0], evict.MatchConditions[0])
	assert.Len(t, evict.MatchConditions, 1, "an eviction's object is not the pod: namespace only")
}

// podEntryCalls reports whether the API server would call the pod entry
// scoped by conditions for the request: the conditions compiled and
// evaluated by the API server's own match-condition code (the environment,
// variables and cost budget a ValidatingWebhook gets).
func podEntryCalls(t *testing.T, conditions []admissionregistrationv1.MatchCondition, op admission.Operation, sub string, oldPod, newPod *corev1.Pod) bool {
	t.Helper()
	fail := admissionregistrationv1.Fail
	acc := apiwebhook.NewValidatingWebhookAccessor("uid", ConfigName, &admissionregistrationv1.ValidatingWebhook{
		Name: PodWebhookName, FailurePolicy: &fail, MatchConditions: conditions})
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	var obj, old runtime.Object
	if newPod != nil {
		obj = newPod
	}
	if oldPod != nil {
		old = oldPod
	}
	attr := admission.NewAttributesRecord(obj, old, gvk, "ns", "p", corev1.SchemeGroupVersion.WithResource("pods"), sub, op, nil, false, nil)
	res := acc.GetCompiledMatcher(compiler).Match(context.Background(), &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk,
		VersionedObject: admission.NewLazyObject(obj), VersionedOldObject: admission.NewLazyObject(old)}, nil, nil)
	require.NoError(t, res.Error, "a match condition must never fail to evaluate")
	return res.Matches
}

// TestPodEntryConditions: which pod requests reach the guard. Requests it
// would always allow (terminating pods, metadata-only updates, unrelated
// pods, status writes other than an in-place start) make no call, so they
// never wait on, nor fail with, an unreachable guard (issue 26 item 6).
func TestPodEntryConditions(t *testing.T) {
	pod, _ := Scopes([]*policyv1alpha1.PodUnavailableBudget{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pub"}}})
	ready := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{pub.PodRelatedPubAnnotation: "pub", pub.PodRelatedPubAnnotationNew: "pub"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:v1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue}}},
	}
	with := func(base *corev1.Pod, mutate func(*corev1.Pod)) *corev1.Pod {
		p := base.DeepCopy()
		mutate(p)
		return p
	}
	now := metav1.Now()
	terminating := with(ready, func(p *corev1.Pod) { p.DeletionTimestamp = &now; p.Finalizers = []string{"example.com/hold"} })
	unrelated := with(ready, func(p *corev1.Pod) { p.Annotations = nil })
	cases := []struct {
		name     string
		op       admission.Operation
		sub      string
		old, new *corev1.Pod
		want     bool
	}{
		{"delete of a protected pod", admission.Delete, "", ready, nil, true},
		{"delete of a terminating pod (the kubelet's grace-0 delete)", admission.Delete, "", terminating, nil, false},
		{"delete of an unrelated pod", admission.Delete, "", unrelated, nil, false},
		{"image update", admission.Update, "", ready, with(ready, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "app:v2" }), true},
		{"resources update", admission.Update, "", ready, with(ready, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}), true},
		{"unavailable-pod label added", admission.Update, "", ready, with(ready, func(p *corev1.Pod) { p.Labels["unavailable-pod.kruise.io/drain"] = "true" }), true},
		{"unavailable-pod label kept, other label added", admission.Update, "",
			with(ready, func(p *corev1.Pod) { p.Labels["unavailable-pod.kruise.io/drain"] = "true" }),
			with(ready, func(p *corev1.Pod) { p.Labels["unavailable-pod.kruise.io/drain"] = "true"; p.Labels["x"] = "y" }), false},
		{"label patch", admission.Update, "", ready, with(ready, func(p *corev1.Pod) { p.Labels["x"] = "y" }), false},
		{"annotation patch", admission.Update, "", ready, with(ready, func(p *corev1.Pod) { p.Annotations["x"] = "y" }), false},
		{"finalizer added", admission.Update, "", ready, with(ready, func(p *corev1.Pod) { p.Finalizers = []string{"example.com/hold"} }), false},
		{"finalizer removed from a terminating pod", admission.Update, "", terminating, with(terminating, func(p *corev1.Pod) { p.Finalizers = nil }), false},
		{"spec change of a terminating pod", admission.Update, "", terminating, with(terminating, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "app:v2" }), false},
		{"image update of an unrelated pod", admission.Update, "", unrelated, with(unrelated, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "app:v2" }), false},
		{"status: in-place update starts", admission.Update, "status", ready, with(ready, func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionFalse }), true},
		{"status: kubelet's write", admission.Update, "status", ready, with(ready, func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }), false},
		{"status: in-place start on a terminating pod", admission.Update, "status", terminating, with(terminating, func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionFalse }), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, podEntryCalls(t, pod.MatchConditions, c.op, c.sub, c.old, c.new))
		})
	}
	// The guard's own classification agrees with the conditions on updates:
	// what they filter out it would allow.
	for _, c := range cases {
		if c.op != admission.Update || c.sub != "" || c.want || pubcontrol.RelatedPub(c.old) == "" || c.old.DeletionTimestamp != nil {
			continue
		}
		_, guarded := pubcontrol.UpdateOperation(c.old, c.new)
		assert.False(t, guarded, "%s: filtered out but the guard would take the budget", c.name)
	}

	none, _ := Scopes(nil)
	assert.False(t, podEntryCalls(t, none.MatchConditions, admission.Delete, "", ready, nil), "no budget: no call")
}
