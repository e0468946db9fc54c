package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

var (
	cloneSetGVR = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}
	astsGVR     = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "statefulsets"}
	crdGVR      = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// createWorkload creates a workload from its JSON spec with the dynamic
// client; its controller need not run: the test creates its pods.
func (h *harness) createWorkload(gvr schema.GroupVersionResource, kind, name, spec string) *unstructured.Unstructured {
	h.T.Helper()
	obj := map[string]any{}
	require.NoError(h.T, json.Unmarshal([]byte(spec), &obj))
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": obj,
	}}
	out, err := h.Env.Dynamic().Resource(gvr).Namespace(h.NS).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(h.T, err)
	return out
}

func templateSpec(app string, replicas int) string {
	return fmt.Sprintf(`{"replicas":%d,"selector":{"matchLabels":{"app":%q}},"serviceName":%q,"template":{"metadata":{"labels":{"app":%q}},"spec":{"containers":[{"name":"main","image":%q}]}}}`,
		replicas, app, app, app, imageV1)
}

func refOf(u *unstructured.Unstructured) *metav1.OwnerReference {
	return ownerRef(u.GetAPIVersion(), u.GetKind(), u.GetName(), u.GetUID())
}

func targetRef(apiVersion, kind, name string) func(*policyv1alpha1.PodUnavailableBudget) {
	return func(p *policyv1alpha1.PodUnavailableBudget) {
		p.Spec.Selector = nil
		p.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
	}
}

func minAvailable(v string) func(*policyv1alpha1.PodUnavailableBudget) {
	return func(p *policyv1alpha1.PodUnavailableBudget) {
		iv := intstr.Parse(v)
		p.Spec.MaxUnavailable, p.Spec.MinAvailable = nil, &iv
	}
}

// widgetCRD defines, for this test only, a namespaced kind with a scale
// subresource, as the v1.2 seed shows it.
func (h *harness) widgetCRD() schema.GroupVersionResource {
	h.T.Helper()
	group := h.NS + ".flotilla.dev"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale: &apiextensionsv1.CustomResourceSubresourceScale{
						SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".status.labelSelector")},
				},
			}},
		},
	}
	raw, err := json.Marshal(crd)
	require.NoError(h.T, err)
	u := &unstructured.Unstructured{}
	require.NoError(h.T, json.Unmarshal(raw, &u.Object))
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	_, err = h.Env.Dynamic().Resource(crdGVR).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(h.T, err)
	h.T.Cleanup(func() {
		_ = h.Env.Dynamic().Resource(crdGVR).Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		_, err := h.Env.Dynamic().Resource(gvr).Namespace(h.NS).List(context.Background(), metav1.ListOptions{})
		return err == nil, nil
	})
	return gvr
}

// Item 1 with targetRef: a CloneSet, an apps/v1 Deployment, an Advanced
// StatefulSet and a custom resource with a scale subresource; expected
// replicas from /scale, maxUnavailable / minAvailable with percentages
// rounded up; a replica change through /scale moves the budget.
func TestBudgetTargetRef(t *testing.T) {
	h := newHarness(t)
	h.start()
	ctx := context.Background()

	cs := h.createWorkload(cloneSetGVR, "CloneSet", "cs", templateSpec("cs", 3))
	h.createPods("cs", 3, refOf(cs))
	asts := h.createWorkload(astsGVR, "StatefulSet", "asts", templateSpec("asts", 2))
	h.createPods("asts", 2, refOf(asts))
	wgvr := h.widgetCRD()
	widget := h.createWorkload(wgvr, "Widget", "widget", `{"replicas":4}`)
	h.createPods("widget", 4, refOf(widget))
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "dep"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dep"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "dep"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: imageV1}}},
			},
		},
	}
	_, err := h.Env.Kube.AppsV1().Deployments(h.NS).Create(ctx, dep, metav1.CreateOptions{})
	require.NoError(t, err)
	// A pod with the Deployment's labels that the Deployment does not own.
	h.createPods("dep-stray", 1, nil, func(p *corev1.Pod) { p.Labels["app"] = "dep"; p.Name = "stray" })

	h.pubs.Create(newPub("cs", "", "34%", targetRef("apps.kruise.io/v1alpha1", "CloneSet", "cs")))
	h.pubs.Create(newPub("asts", "", "1", targetRef("apps.kruise.io/v1beta1", "StatefulSet", "asts")))
	h.pubs.Create(newPub("widget", "", "", targetRef(wgvr.GroupVersion().String(), "Widget", "widget"), minAvailable("3")))
	h.pubs.Create(newPub("dep", "", "", targetRef("apps/v1", "Deployment", "dep"), minAvailable("50%")))

	h.waitStatus("cs", "3 replicas, 34% of 3 rounds up to 2", counts(2, 3, 1, 3))
	h.waitStatus("asts", "2 replicas, 1 unavailable", counts(1, 2, 1, 2))
	h.waitStatus("widget", "4 replicas from the CR's /scale, minAvailable 3", counts(1, 4, 3, 4))
	h.waitStatus("dep", "2 replicas through its ReplicaSet, minAvailable 50%", counts(1, 2, 1, 2))
	for _, app := range []string{"cs", "asts", "widget"} {
		for _, p := range h.pods(app) {
			assert.Equal(t, app, p.Annotations[pub.PodRelatedPubAnnotation], p.Name)
		}
	}
	stray, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(ctx, "stray", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, stray.Annotations[pub.PodRelatedPubAnnotation], "not the Deployment's pod")

	// Scale the CloneSet through /scale: the workload watch moves the budget.
	_, err = h.Env.Dynamic().Resource(cloneSetGVR).Namespace(h.NS).Patch(ctx, "cs", types.MergePatchType,
		[]byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{}, "scale")
	require.NoError(t, err)
	h.waitStatus("cs", "5 replicas: desired 5-ceil(1.7)", counts(0, 3, 3, 5))
}

// Item 1 with a selector: the expected count is the sum of the distinct
// workloads' replicas; pub.kruise.io/protect-total-replicas replaces it;
// kruise.io/pub-protect-operations limits what is protected.
func TestBudgetSelector(t *testing.T) {
	h := newHarness(t)
	h.start()
	a := h.createWorkload(cloneSetGVR, "CloneSet", "a", templateSpec("mix", 2))
	b := h.createWorkload(cloneSetGVR, "CloneSet", "b", templateSpec("mix", 3))
	h.createPods("mix", 2, refOf(a), func(p *corev1.Pod) { p.Name = "a-" + p.Name })
	h.createPods("mix", 3, refOf(b), func(p *corev1.Pod) { p.Name = "b-" + p.Name })
	h.createPods("mix", 1, nil, func(p *corev1.Pod) { p.Name = "bare" })
	h.waitReady("mix", 6)

	h.pubs.Create(newPub("mix", "mix", "1"))
	h.waitScoped()
	h.waitStatus("mix", "2+3 expected, 6 available", counts(2, 6, 4, 5))

	h.pubs.Modify("mix", func(p *policyv1alpha1.PodUnavailableBudget) {
		p.Annotations = map[string]string{pub.PubProtectTotalReplicasAnnotation: "7", pub.PubProtectOperationAnnotation: "EVICT"}
	})
	h.waitStatus("mix", "protect-total-replicas 7", counts(0, 6, 6, 7))
	err := h.evict("bare", false)
	require.Error(t, err, "EVICT is protected")
	assert.True(t, apierrors.IsTooManyRequests(err), "%v", err)
	require.NoError(t, h.deletePod("bare"), "DELETE is not in kruise.io/pub-protect-operations")
}

// Seed v0.10: the web-server PUB as published (with the group that
// OpenKruise serves, policy.kruise.io: the blog's apps.kruise.io is a
// typo there), over a CloneSet of 5: 60% unavailable allowed is 3, desired 2.
func TestSeedV010(t *testing.T) {
	h := newHarness(t)
	h.start()
	cs := h.createWorkload(cloneSetGVR, "CloneSet", "web-server", templateSpec("web-server", 5))
	h.createPods("web-server", 5, refOf(cs))
	const seed = `
apiVersion: policy.kruise.io/v1alpha1
kind: PodUnavailableBudget
metadata:
  name: web-server-pub
spec:
  targetRef:
    apiVersion: apps.kruise.io/v1alpha1
    kind: CloneSet
    name: web-server
  # selector:
  #   matchLabels:
  #     app: web-server
  maxUnavailable: 60%
  # minAvailable: 40%
`
	var p policyv1alpha1.PodUnavailableBudget
	require.NoError(t, yaml.UnmarshalStrict([]byte(strings.TrimSpace(seed)), &p))
	h.pubs.Create(&p)
	h.waitStatus("web-server-pub", "5 * 60% = 3 allowed, 2 desired", counts(3, 5, 2, 5))
	_ = time.Second
}
