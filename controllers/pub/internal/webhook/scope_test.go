package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
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
