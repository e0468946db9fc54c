package workload

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	discoveryfake "k8s.io/client-go/discovery/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/restmapper"
	scalefake "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const ns = "ns"

// scaleOf is what the /scale subresource of one object answers.
type scaleOf struct {
	uid         types.UID
	replicas    int32
	selector    string
	terminating bool
}

// world is the fake cluster a finder sees: the kinds discovery serves, the
// /scale of each object ("resource/name"), and ReplicaSets' metadata.
type world struct {
	resources []*metav1.APIResourceList
	scales    map[string]scaleOf
	rs        []runtime.Object
}

var served = []*metav1.APIResourceList{
	{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments", Kind: "Deployment", Namespaced: true},
		{Name: "replicasets", Kind: "ReplicaSet", Namespaced: true},
		{Name: "statefulsets", Kind: "StatefulSet", Namespaced: true},
	}},
	{GroupVersion: "apps.kruise.io/v1alpha1", APIResources: []metav1.APIResource{
		{Name: "clonesets", Kind: "CloneSet", Namespaced: true},
	}},
}

// newFinder builds the finder over fakes; scaleGets counts the /scale GETs.
func newFinder(t *testing.T, w world) (*finder, *discoveryfake.FakeDiscovery, *int) {
	t.Helper()
	disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = w.resources
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	sc := &scalefake.FakeScaleClient{}
	gets := 0
	sc.AddReactor("get", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		gets++
		g := a.(clienttesting.GetAction)
		s, ok := w.scales[g.GetResource().Resource+"/"+g.GetName()]
		if !ok {
			return true, nil, apierrors.NewNotFound(g.GetResource().GroupResource(), g.GetName())
		}
		out := &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Namespace: g.GetNamespace(), Name: g.GetName(), UID: s.uid},
			Spec:       autoscalingv1.ScaleSpec{Replicas: s.replicas},
			Status:     autoscalingv1.ScaleStatus{Selector: s.selector},
		}
		if s.terminating {
			out.DeletionTimestamp = &metav1.Time{}
		}
		return true, out, nil
	})
	scheme := metadatafake.NewTestScheme()
	rsKind := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	scheme.AddKnownTypeWithName(rsKind, &metav1.PartialObjectMetadata{})
	scheme.AddKnownTypeWithName(rsKind.GroupVersion().WithKind("ReplicaSetList"), &metav1.PartialObjectMetadataList{})
	meta := metadatafake.NewSimpleMetadataClient(scheme, w.rs...)
	return &finder{mapper: mapper, meta: meta, scales: sc}, disc, &gets
}

func replicaSet(name string, owner *metav1.OwnerReference) *metav1.PartialObjectMetadata {
	rs := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
	}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return rs
}

func TestGet(t *testing.T) {
	f, _, _ := newFinder(t, world{resources: served, scales: map[string]scaleOf{
		"clonesets/web":     {uid: "uid-web", replicas: 3, selector: "app=web"},
		"clonesets/nosel":   {uid: "uid-nosel", replicas: 2},
		"clonesets/badsel":  {uid: "uid-badsel", replicas: 2, selector: "app in (("},
		"statefulsets/db":   {uid: "uid-db", replicas: 5, selector: "app=db", terminating: true},
		"deployments/front": {uid: "uid-front", replicas: 0, selector: "app=front"},
	}})
	ctx := context.Background()
	for _, tc := range []struct {
		name              string
		apiVersion, kind  string
		obj               string
		want              *Workload
		wantErr           bool
		matches, excludes labels.Set
	}{
		{name: "CloneSet through /scale", apiVersion: "apps.kruise.io/v1alpha1", kind: "CloneSet", obj: "web",
			want:    &Workload{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-web", Replicas: 3},
			matches: labels.Set{"app": "web"}, excludes: labels.Set{"app": "db"}},
		{name: "terminating StatefulSet", apiVersion: "apps/v1", kind: "StatefulSet", obj: "db",
			want:    &Workload{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "uid-db", Replicas: 5, Terminating: true},
			matches: labels.Set{"app": "db"}},
		{name: "zero replicas", apiVersion: "apps/v1", kind: "Deployment", obj: "front",
			want: &Workload{APIVersion: "apps/v1", Kind: "Deployment", Name: "front", UID: "uid-front"}},
		{name: "no published selector matches nothing", apiVersion: "apps.kruise.io/v1alpha1", kind: "CloneSet", obj: "nosel",
			want:     &Workload{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "nosel", UID: "uid-nosel", Replicas: 2},
			excludes: labels.Set{"app": "web"}},
		{name: "unparsable selector", apiVersion: "apps.kruise.io/v1alpha1", kind: "CloneSet", obj: "badsel", wantErr: true},
		{name: "object not found", apiVersion: "apps.kruise.io/v1alpha1", kind: "CloneSet", obj: "gone"},
		{name: "kind not served", apiVersion: "example.com/v1", kind: "Widget", obj: "w"},
		{name: "bad apiVersion", apiVersion: "a/b/c", kind: "CloneSet", obj: "web", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.Get(ctx, tc.apiVersion, tc.kind, ns, tc.obj)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.NotNil(t, got.Selector)
			if tc.matches != nil {
				assert.True(t, got.Selector.Matches(tc.matches), "selector %s matches %v", got.Selector, tc.matches)
			}
			if tc.excludes != nil {
				assert.False(t, got.Selector.Matches(tc.excludes), "selector %s excludes %v", got.Selector, tc.excludes)
			}
			got.Selector = nil
			assert.Equal(t, tc.want, got)
		})
	}
}

// A kind installed after the finder started (a CRD): the first miss resets
// discovery once and finds it.
func TestGetKindInstalledLater(t *testing.T) {
	f, disc, _ := newFinder(t, world{resources: served[:1], scales: map[string]scaleOf{
		"clonesets/web": {uid: "uid-web", replicas: 3, selector: "app=web"},
	}})
	ctx := context.Background()
	w, err := f.Get(ctx, "apps.kruise.io/v1alpha1", "CloneSet", ns, "web")
	require.NoError(t, err)
	assert.Nil(t, w, "not served yet")

	disc.Resources = served
	w, err = f.Get(ctx, "apps.kruise.io/v1alpha1", "CloneSet", ns, "web")
	require.NoError(t, err)
	require.NotNil(t, w, "served now: discovery was reset")
	assert.Equal(t, types.UID("uid-web"), w.UID)
}

func TestTopLevel(t *testing.T) {
	depRef := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "front", UID: "uid-front", Controller: ptr.To(true)}
	f, _, gets := newFinder(t, world{
		resources: served,
		scales: map[string]scaleOf{
			"deployments/front": {uid: "uid-front", replicas: 4, selector: "app=front"},
			"replicasets/bare":  {uid: "uid-bare", replicas: 2, selector: "app=bare"},
			"clonesets/web":     {uid: "uid-web", replicas: 3, selector: "app=web"},
		},
		rs: []runtime.Object{replicaSet("front-abc", depRef), replicaSet("bare", nil)},
	})
	ctx := context.Background()
	rsRef := func(name string) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: types.UID("uid-" + name)}
	}
	for _, tc := range []struct {
		name    string
		ref     *metav1.OwnerReference
		wantUID types.UID // "" for nil
		wantErr bool
	}{
		{"ReplicaSet of a Deployment resolves to the Deployment", rsRef("front-abc"), "uid-front", false},
		{"ReplicaSet without a Deployment is its own workload", rsRef("bare"), "uid-bare", false},
		{"ReplicaSet gone", rsRef("missing"), "", false},
		{"CloneSet owner", &metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-web"}, "uid-web", false},
		{"namesake replaced the owner", &metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-old"}, "", false},
		{"owner gone", &metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "gone", UID: "uid-gone"}, "", false},
		{"bad apiVersion", &metav1.OwnerReference{APIVersion: "a/b/c", Kind: "CloneSet", Name: "web"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := f.TopLevel(ctx, tc.ref, ns)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			if tc.wantUID == "" {
				assert.Nil(t, w)
				return
			}
			require.NotNil(t, w)
			assert.Equal(t, tc.wantUID, w.UID)
		})
	}
	assert.Positive(t, *gets, "workloads were read through /scale")
}

// The ReplicaSet is read through the metadata client (RBAC: get on
// replicasets only), never through /scale of the Deployment's ReplicaSet.
func TestTopLevelReadsReplicaSetMetadata(t *testing.T) {
	depRef := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "front", UID: "uid-front", Controller: ptr.To(true)}
	f, _, _ := newFinder(t, world{resources: served,
		scales: map[string]scaleOf{"deployments/front": {uid: "uid-front", replicas: 4}},
		rs:     []runtime.Object{replicaSet("front-abc", depRef)}})
	_, err := f.TopLevel(context.Background(), &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "front-abc"}, ns)
	require.NoError(t, err)
	var reads []schema.GroupVersionResource
	for _, a := range f.meta.(*metadatafake.FakeMetadataClient).Actions() {
		reads = append(reads, a.GetResource())
	}
	assert.Equal(t, []schema.GroupVersionResource{{Group: "apps", Version: "v1", Resource: "replicasets"}}, reads)
}
