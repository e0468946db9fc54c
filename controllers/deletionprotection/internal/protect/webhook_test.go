package protect

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func gates(t *testing.T, protection, crd bool) featuregate.FeatureGate {
	t.Helper()
	g := features.MustNewGate(features.ResourcesDeletionProtection, features.DeletionProtectionForCRDCascadingGate)
	require.NoError(t, g.SetFromMap(map[string]bool{
		string(features.ResourcesDeletionProtection): protection, string(features.DeletionProtectionForCRDCascadingGate): crd}))
	return g
}

func deleteRequest(t *testing.T, op admissionv1.Operation, old any) kitwebhook.Request {
	t.Helper()
	raw, err := json.Marshal(old)
	require.NoError(t, err)
	return kitwebhook.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, OldObject: runtime.RawExtension{Raw: raw}}}
}

// metaClient is a fake metadata client holding objects (of the kinds in
// gvks, listed as <Kind>List).
func metaClient(t *testing.T, gvks []schema.GroupVersionKind, objects ...runtime.Object) *metadatafake.FakeMetadataClient {
	t.Helper()
	s := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(s))
	for _, gvk := range gvks {
		s.AddKnownTypeWithName(gvk, &metav1.PartialObjectMetadata{})
		s.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &metav1.PartialObjectMetadataList{})
	}
	return metadatafake.NewSimpleMetadataClient(s, objects...)
}

func partial(gvk schema.GroupVersionKind, ns, name string, deleting bool) *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	p.SetGroupVersionKind(gvk)
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		p.Finalizers = []string{"x"}
	}
	return p
}

func TestNamespaceHandler(t *testing.T) {
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	nsObj := func(value string, deleting bool) *corev1.Namespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{}}}
		if value != "" {
			ns.Labels[Label] = value
		}
		if deleting {
			now := metav1.Now()
			ns.DeletionTimestamp = &now
		}
		return ns
	}
	bound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "data"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	cases := []struct {
		name       string
		op         admissionv1.Operation
		ns         *corev1.Namespace
		protection bool
		pods       []runtime.Object
		pvcs       []runtime.Object
		want       string // "" allowed
	}{
		{"active pod", admissionv1.Delete, nsObj(Cascading, false), true,
			[]runtime.Object{partial(podGVK, "team", "a", false)}, nil, cascading("active pods 1>0")},
		{"pod of another namespace", admissionv1.Delete, nsObj(Cascading, false), true,
			[]runtime.Object{partial(podGVK, "other", "a", false)}, nil, ""},
		{"pod being deleted only", admissionv1.Delete, nsObj(Cascading, false), true,
			[]runtime.Object{partial(podGVK, "team", "a", true)}, nil, ""},
		{"bound claim", admissionv1.Delete, nsObj(Cascading, false), true, nil, []runtime.Object{bound}, cascading(`"Bound" status pvc 1>0`)},
		{"always", admissionv1.Delete, nsObj(Always, false), true, nil, nil, AlwaysMessage()},
		{"unlabelled", admissionv1.Delete, nsObj("", false), true, []runtime.Object{partial(podGVK, "team", "a", false)}, nil, ""},
		{"gate off", admissionv1.Delete, nsObj(Always, false), false, nil, nil, ""},
		{"already being deleted", admissionv1.Delete, nsObj(Always, true), true, nil, nil, ""},
		{"not a delete", admissionv1.Update, nsObj(Always, false), true, nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &Webhook{
				Kube:     kubefake.NewClientset(tc.pvcs...),
				Metadata: metaClient(t, []schema.GroupVersionKind{podGVK}, tc.pods...),
				Gates:    gates(t, tc.protection, true),
			}
			resp := w.Namespace(context.Background(), deleteRequest(t, tc.op, tc.ns))
			check(t, resp, tc.want)
		})
	}
}

func cascading(reason string) string { return forbidden(Cascading, reason) }

func check(t *testing.T, resp kitwebhook.Response, want string) {
	t.Helper()
	if want == "" {
		assert.True(t, resp.Allowed, "allowed; got %+v", resp.Result)
		return
	}
	require.False(t, resp.Allowed)
	assert.Equal(t, want, resp.Result.Message)
	assert.EqualValues(t, 403, resp.Result.Code)
}

func TestCRDHandler(t *testing.T) {
	widgetGVK := schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}
	crd := func(value string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", Labels: map[string]string{Label: value}},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
					{Name: "v1", Served: true}, {Name: "v2", Served: true, Storage: true}}},
		}
	}
	cases := []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		gate    bool
		objects []runtime.Object
		listErr bool
		want    string
	}{
		{"objects", crd(Cascading), true, []runtime.Object{partial(widgetGVK, "a", "w1", false), partial(widgetGVK, "b", "w2", false)}, false,
			cascading("active CRs 2>0")},
		{"objects being deleted only", crd(Cascading), true, []runtime.Object{partial(widgetGVK, "a", "w1", true)}, false, ""},
		{"no objects", crd(Cascading), true, nil, false, ""},
		{"gate off", crd(Cascading), false, nil, false, CRDGateOffMessage()},
		{"always, gate off", crd(Always), false, nil, false, AlwaysMessage()},
		{"list fails", crd(Cascading), true, nil, true, "failed to list CRs of example.com/v2, Resource=widgets: boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			meta := metaClient(t, []schema.GroupVersionKind{widgetGVK}, tc.objects...)
			if tc.listErr {
				meta.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("boom")
				})
			}
			w := &Webhook{Kube: kubefake.NewClientset(), Metadata: meta, Gates: gates(t, true, tc.gate)}
			check(t, w.CRD(context.Background(), deleteRequest(t, admissionv1.Delete, tc.crd)), tc.want)
		})
	}
}

func TestListedVersion(t *testing.T) {
	v := func(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage}
	}
	cases := []struct {
		name     string
		versions []apiextensionsv1.CustomResourceDefinitionVersion
		want     string
		err      bool
	}{
		{"storage served", []apiextensionsv1.CustomResourceDefinitionVersion{v("v1", true, false), v("v2", true, true)}, "v2", false},
		{"storage not served", []apiextensionsv1.CustomResourceDefinitionVersion{v("v1", false, true), v("v2", true, false)}, "v2", false},
		{"none served", []apiextensionsv1.CustomResourceDefinitionVersion{v("v1", false, true)}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets"}, Versions: tc.versions}}
			gvr, err := ListedVersion(crd)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, schema.GroupVersionResource{Group: "example.com", Version: tc.want, Resource: "widgets"}, gvr)
		})
	}
}
