package webhook

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	policylisters "github.com/flotilla-dev/flotilla/client/listers/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func guardedPod(name, uid string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + uidOr(uid, name)),
			Annotations: map[string]string{pub.PodRelatedPubAnnotation: "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:v1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func uidOr(uid, name string) string {
	if uid != "" {
		return uid
	}
	return name
}

// Issue 26 item 7: budget is taken only for the pod the API server has.
// A DELETE review whose old object does not match the live pod — a pod
// that does not exist, another pod of that name, one the live pod's
// annotations do not tie to the budget, one not available — takes nothing;
// the genuine review of the same pod does.
func TestGuardTakesBudgetOnlyForTheLivePod(t *testing.T) {
	live := guardedPod("p1", "")
	unrelated := guardedPod("p2", "")
	unrelated.Annotations = nil
	unready := guardedPod("p3", "")
	unready.Status.Conditions[0].Status = corev1.ConditionFalse
	for _, tc := range []struct {
		name   string
		review *corev1.Pod
		taken  bool
	}{
		{"genuine", guardedPod("p1", ""), true},
		{"no such pod", guardedPod("ghost", ""), false},
		{"another pod of that name (uid)", guardedPod("p1", "forged"), false},
		{"live pod not tied to the budget", guardedPod("p2", ""), false},
		{"live pod not available", guardedPod("p3", ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := budget(1, "1")
			client := fake.NewSimpleClientset(b)
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			require.NoError(t, idx.Add(b))
			g := &Guard{Pubs: policylisters.NewPodUnavailableBudgetLister(idx), Client: client,
				Kube:  kubefake.NewClientset(live, unrelated, unready),
				Gates: features.MustNewGate(features.PodUnavailableBudgetDeleteGate, features.PodUnavailableBudgetUpdateGate, features.InPlacePodVerticalScaling)}
			raw, err := json.Marshal(tc.review)
			require.NoError(t, err)
			resp := g.ValidatePod(context.Background(), kitwebhook.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "r1", Operation: admissionv1.Delete, Namespace: "ns", Name: tc.review.Name,
				Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, OldObject: runtime.RawExtension{Raw: raw}}})
			assert.True(t, resp.Allowed)
			got, err := client.PolicyV1alpha1().PodUnavailableBudgets("ns").Get(context.Background(), "web", metav1.GetOptions{})
			require.NoError(t, err)
			_, recorded := got.Status.DisruptedPods[tc.review.Name]
			assert.Equal(t, tc.taken, recorded, "disruptedPods: %v", got.Status.DisruptedPods)
			want := int32(1)
			if tc.taken {
				want = 0
			}
			assert.Equal(t, want, got.Status.UnavailableAllowed)
		})
	}
}
