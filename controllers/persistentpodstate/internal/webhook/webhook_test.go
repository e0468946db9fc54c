package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/topology"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

const zone, host = "topology.kubernetes.io/zone", "kubernetes.io/hostname"

func testState(ns, name, apiVersion, target string, states map[string]appsv1alpha1.PodState) *appsv1alpha1.PersistentPodState {
	return &appsv1alpha1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference:            appsv1alpha1.PersistentPodStateTargetReference{APIVersion: apiVersion, Kind: "StatefulSet", Name: target},
			RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone}},
			PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{Weight: 40,
				Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{host}}}},
		},
		Status: appsv1alpha1.PersistentPodStateStatus{PodStates: states},
	}
}

func recorded(z, h string) appsv1alpha1.PodState {
	return appsv1alpha1.PodState{NodeName: h, NodeTopologyLabels: map[string]string{zone: z, host: h}}
}

func stsPod(ns, name, apiVersion, owner string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{
		{APIVersion: apiVersion, Kind: "StatefulSet", Name: owner, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
}

func review(t *testing.T, h *Handlers, pod *corev1.Pod) (kitwebhook.Response, *corev1.Pod) {
	t.Helper()
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	req := kitwebhook.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: pod.Namespace,
		Object: runtime.RawExtension{Raw: raw}}}
	resp := h.MutatePod(context.Background(), req)
	if len(resp.Patch) == 0 {
		return resp, nil
	}
	out := applyPatch(t, raw, resp.Patch)
	return resp, out
}

func TestMutatePod(t *testing.T) {
	ix := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, ix.AddIndexers(cache.Indexers{topology.TargetIndex: func(obj any) ([]string, error) {
		t, ok := topology.OfPersistentPodState(obj.(*appsv1alpha1.PersistentPodState))
		if !ok {
			return nil, nil
		}
		return []string{t.String()}, nil
	}}))
	require.NoError(t, ix.Add(testState("ns", "web", "apps.kruise.io/v1beta1", "web", map[string]appsv1alpha1.PodState{
		"web-0": recorded("z1", "n1"), "web-1": {NodeName: "n2"}})))
	h := &Handlers{States: ix}

	resp, out := review(t, h, stsPod("ns", "web-0", "apps.kruise.io/v1beta1", "web"))
	require.True(t, resp.Allowed)
	require.NotNil(t, out, "a recorded pod is patched")
	assert.Equal(t, map[string]string{zone: "z1"}, out.Spec.NodeSelector)
	assert.Equal(t, "web", out.Annotations[appsv1alpha1.AnnotationInjectedPersistentPodState])
	assert.Equal(t, []corev1.PreferredSchedulingTerm{{Weight: 40, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: host, Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}, out.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)

	for what, pod := range map[string]*corev1.Pod{
		"the v1alpha1 apiVersion of the same Advanced StatefulSet": stsPod("ns", "web-0", "apps.kruise.io/v1alpha1", "web"),
	} {
		resp, out := review(t, h, pod)
		assert.True(t, resp.Allowed, what)
		assert.NotNil(t, out, what)
	}
	for what, pod := range map[string]*corev1.Pod{
		"a pod never recorded (first creation)":   stsPod("ns", "web-2", "apps.kruise.io/v1beta1", "web"),
		"a record without topology values":        stsPod("ns", "web-1", "apps.kruise.io/v1beta1", "web"),
		"an apps/v1 StatefulSet of the same name": stsPod("ns", "web-0", "apps/v1", "web"),
		"another namespace":                       stsPod("other", "web-0", "apps.kruise.io/v1beta1", "web"),
		"a pod of no StatefulSet":                 {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"}},
	} {
		resp, out := review(t, h, pod)
		assert.True(t, resp.Allowed, what)
		assert.Nil(t, out, what+": unchanged")
	}
}

func TestPodScope(t *testing.T) {
	assert.Equal(t, kitwebhook.Never, PodScope(nil).MatchConditions[0].Expression, "no PersistentPodState: never called")
	empty := testState("ns", "web", "apps/v1", "web", nil)
	assert.Equal(t, kitwebhook.Never, PodScope([]*appsv1alpha1.PersistentPodState{empty}).MatchConditions[0].Expression,
		"no records yet: never called")
	a := testState("ns", "web", "apps/v1", "web", map[string]appsv1alpha1.PodState{"web-1": recorded("z", "n"), "web-0": recorded("z", "n"), "web-2": {NodeName: "n"}})
	b := testState("db", "db", "apps.kruise.io/v1beta1", "db", map[string]appsv1alpha1.PodState{"db-0": recorded("z", "n")})
	deleting := b.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	s := PodScope([]*appsv1alpha1.PersistentPodState{a, b, deleting})
	require.Len(t, s.MatchConditions, 1)
	assert.Equal(t, ScopeCondition, s.MatchConditions[0].Name)
	e := s.MatchConditions[0].Expression
	for _, want := range []string{`request.namespace == "ns"`, `r.name == "web"`, `r.apiVersion.startsWith("apps/")`, `object.metadata.name in ["web-0", "web-1"]`,
		`request.namespace == "db"`, `r.apiVersion.startsWith("apps.kruise.io/")`, `["db-0"]`} {
		assert.Contains(t, e, want)
	}
	assert.NotContains(t, e, "web-2", "a record without topology values constrains nothing")

	many := map[string]appsv1alpha1.PodState{}
	for i := 0; i < 5000; i++ {
		many[fmt.Sprintf("web-%d", i)] = recorded("z", "n")
	}
	wide := PodScope([]*appsv1alpha1.PersistentPodState{testState("ns", "web", "apps/v1", "web", many)}).MatchConditions[0].Expression
	assert.LessOrEqual(t, len(wide), maxScopeLen)
	assert.False(t, strings.Contains(wide, "object.metadata.name in"), "too many names: every pod of the StatefulSet")
	assert.Contains(t, wide, `r.name == "web"`)
}

func applyPatch(t *testing.T, raw, patch []byte) *corev1.Pod {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	require.NoError(t, err)
	out, err := p.Apply(raw)
	require.NoError(t, err)
	var pod corev1.Pod
	require.NoError(t, json.Unmarshal(out, &pod))
	return &pod
}
