package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	policylisters "github.com/flotilla-dev/flotilla/client/listers/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/workload"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// fakeFinder knows workloads by kind/name and ReplicaSets by uid.
type fakeFinder struct {
	workloads map[string]*workload.Workload
	rsOwner   map[types.UID]string // ReplicaSet uid -> "Deployment/name"
}

func (f fakeFinder) Get(_ context.Context, _, kind, _, name string) (*workload.Workload, error) {
	return f.workloads[kind+"/"+name], nil
}

func (f fakeFinder) TopLevel(_ context.Context, ref *metav1.OwnerReference, _ string) (*workload.Workload, error) {
	if d, ok := f.rsOwner[ref.UID]; ok {
		return f.workloads[d], nil
	}
	return f.workloads[ref.Kind+"/"+ref.Name], nil
}

func pubAt(name string, age time.Duration, sel map[string]string, ref *policyv1alpha1.TargetReference) *policyv1alpha1.PodUnavailableBudget {
	p := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		ResourceVersion: "1", CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))}}
	if sel != nil {
		p.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	}
	p.Spec.TargetReference = ref
	return p
}

func lister(t *testing.T, pubs ...*policyv1alpha1.PodUnavailableBudget) policylisters.PodUnavailableBudgetLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pubs {
		require.NoError(t, idx.Add(p))
	}
	return policylisters.NewPodUnavailableBudgetLister(idx)
}

func markedPod(mark string, lbls map[string]string, owner *metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid", Labels: lbls,
		Annotations: map[string]string{pub.PodRelatedPubAnnotation: mark, pub.PodRelatedPubAnnotationNew: mark}}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return p
}

// Issue 26 item 5: a pod marked for a budget that does not protect it is
// guarded by the budget that does, not let through.
func TestBudgetOf(t *testing.T) {
	web := map[string]string{"app": "web"}
	deploy := &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d"}
	cloneset := &policyv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "c"}
	gone := metav1.Now()
	deleting := pubAt("deleting", time.Hour, web, nil)
	deleting.DeletionTimestamp = &gone
	finder := fakeFinder{
		workloads: map[string]*workload.Workload{
			"Deployment/d": {Kind: "Deployment", Name: "d", UID: "d-uid", Replicas: 3, Selector: labels.SelectorFromSet(web)},
			"CloneSet/c":   {Kind: "CloneSet", Name: "c", UID: "c-uid", Replicas: 3, Selector: labels.SelectorFromSet(map[string]string{"app": "cs"})},
		},
		rsOwner: map[types.UID]string{"rs-uid": "Deployment/d"},
	}
	rs := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "d-abc", UID: "rs-uid", Controller: ptr.To(true)}
	otherRS := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "e-abc", UID: "rs2-uid", Controller: ptr.To(true)}
	cs := &metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "c", UID: "c-uid", Controller: ptr.To(true)}
	cases := []struct {
		name   string
		pubs   []*policyv1alpha1.PodUnavailableBudget
		pod    *corev1.Pod
		finder workload.Finder
		want   string
	}{
		{"unmarked", []*policyv1alpha1.PodUnavailableBudget{pubAt("new", 0, web, nil)}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: web}}, finder, ""},
		{"marked for an existing budget", []*policyv1alpha1.PodUnavailableBudget{pubAt("web", 0, web, nil)}, markedPod("web", web, nil), finder, "web"},
		{"recreated under a new name", []*policyv1alpha1.PodUnavailableBudget{pubAt("new", 0, web, nil)}, markedPod("old", web, nil), finder, "new"},
		{"named budget being deleted", []*policyv1alpha1.PodUnavailableBudget{deleting, pubAt("new", 0, web, nil)}, markedPod("deleting", web, nil), finder, "new"},
		{"named selector no longer selects the pod", []*policyv1alpha1.PodUnavailableBudget{pubAt("db", time.Hour, map[string]string{"app": "db"}, nil), pubAt("web", 0, web, nil)},
			markedPod("db", web, nil), finder, "web"},
		{"stale mark, nothing covers", []*policyv1alpha1.PodUnavailableBudget{pubAt("db", 0, map[string]string{"app": "db"}, nil)}, markedPod("old", web, nil), finder, ""},
		{"stale mark, oldest covering budget", []*policyv1alpha1.PodUnavailableBudget{pubAt("young", 0, web, nil), pubAt("elder", time.Hour, map[string]string{"app": "web", "x": "1"}, nil),
			pubAt("eldest", 2*time.Hour, web, nil)}, markedPod("old", map[string]string{"app": "web", "x": "1"}, nil), finder, "eldest"},
		{"targetRef Deployment through its ReplicaSet", []*policyv1alpha1.PodUnavailableBudget{pubAt("d", 0, nil, deploy)}, markedPod("old", nil, rs), finder, "d"},
		{"targetRef Deployment, another ReplicaSet", []*policyv1alpha1.PodUnavailableBudget{pubAt("d", 0, nil, deploy)}, markedPod("old", nil, otherRS), finder, ""},
		{"targetRef CloneSet, its pod", []*policyv1alpha1.PodUnavailableBudget{pubAt("c", 0, nil, cloneset)}, markedPod("old", nil, cs), finder, "c"},
		{"targetRef, ownerless pod its /scale selector selects", []*policyv1alpha1.PodUnavailableBudget{pubAt("d", 0, nil, deploy)}, markedPod("old", web, nil), finder, "d"},
		{"targetRef without a finder: the direct controller", []*policyv1alpha1.PodUnavailableBudget{pubAt("c", 0, nil, cloneset)}, markedPod("old", nil, cs), nil, "c"},
		{"targetRef without a finder: another name", []*policyv1alpha1.PodUnavailableBudget{pubAt("c", 0, nil, cloneset)},
			markedPod("old", nil, &metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "other", Controller: ptr.To(true)}), nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Guard{Pubs: lister(t, c.pubs...), Finder: c.finder}
			got, err := g.budgetOf(context.Background(), c.pod)
			require.NoError(t, err)
			name := ""
			if got != nil {
				name = got.Name
			}
			assert.Equal(t, c.want, name)
		})
	}
}

// The whole handler: a budget recreated under a new name refuses the
// delete its numbers forbid, though the pod is still marked for the old
// one.
func TestValidatePodStaleMark(t *testing.T) {
	spent := pubAt("new", 0, map[string]string{"app": "web"}, nil)
	spent.Status = policyv1alpha1.PodUnavailableBudgetStatus{UnavailableAllowed: 0, CurrentAvailable: 3, DesiredAvailable: 3, TotalReplicas: 3}
	pod := markedPod("old", map[string]string{"app": "web"}, nil)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	g := &Guard{Pubs: lister(t, spent), Client: fake.NewSimpleClientset(spent), Kube: kubefake.NewClientset(pod)}
	resp := g.ValidatePod(context.Background(), kitwebhook.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Delete, Namespace: "ns", Name: pod.Name, OldObject: runtime.RawExtension{Raw: raw}}})
	require.False(t, resp.Allowed, "a stale mark must not let the delete through")
	assert.Contains(t, resp.Result.Message, "PodUnavailableBudget new refuses DELETE of pod p")
}
