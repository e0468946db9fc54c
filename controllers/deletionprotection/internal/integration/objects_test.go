package integration

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	servicesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	ingressesGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
)

// object is an object of apiVersion/kind named name with labels and spec.
func object(apiVersion, kind, name string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func service(name string, labels map[string]string) *unstructured.Unstructured {
	return object("v1", "Service", name, labels, map[string]any{
		"ports": []any{map[string]any{"port": int64(80)}},
	})
}

func ingress(name string, labels map[string]string) *unstructured.Unstructured {
	return object("networking.k8s.io/v1", "Ingress", name, labels, map[string]any{
		"defaultBackend": map[string]any{"service": map[string]any{"name": "backend", "port": map[string]any{"number": int64(80)}}},
	})
}

// podTemplate is a pod template no node can run (its pods, if a controller
// makes any, stay Pending): the workloads here are only ever deleted.
func podTemplate(app string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": app}},
		"spec": map[string]any{
			"nodeSelector": map[string]any{"deletion-protection.flotilla.dev/nowhere": "true"},
			"containers":   []any{map[string]any{"name": "main", "image": "registry.k8s.io/pause:3.10"}},
		},
	}
}

// workloadKind is a kind whose Cascading protection is its spec.replicas.
type workloadKind struct {
	gvr        schema.GroupVersionResource
	apiVersion string
	kind       string
	spec       func(app string, replicas int64) map[string]any
}

func replicatedSpec(app string, replicas int64) map[string]any {
	return map[string]any{
		"replicas": replicas,
		"selector": map[string]any{"matchLabels": map[string]any{"app": app}},
		"template": podTemplate(app),
	}
}

func statefulSpec(app string, replicas int64) map[string]any {
	s := replicatedSpec(app, replicas)
	s["serviceName"] = app
	return s
}

var workloadKinds = []workloadKind{
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "apps/v1", "Deployment", replicatedSpec},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, "apps/v1", "ReplicaSet", replicatedSpec},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, "apps/v1", "StatefulSet", statefulSpec},
	{schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}, "apps.kruise.io/v1alpha1", "CloneSet", replicatedSpec},
	{schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "statefulsets"}, "apps.kruise.io/v1beta1", "StatefulSet", statefulSpec},
	{schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "statefulsets"}, "apps.kruise.io/v1alpha1", "StatefulSet", statefulSpec},
	{schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "uniteddeployments"}, "apps.kruise.io/v1alpha1", "UnitedDeployment",
		func(app string, replicas int64) map[string]any {
			return map[string]any{
				"replicas": replicas,
				"selector": map[string]any{"matchLabels": map[string]any{"app": app}},
				"template": map[string]any{"statefulSetTemplate": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": app}},
					"spec":     statefulSpec(app, 0),
				}},
				"topology": map[string]any{"subsets": []any{map[string]any{"name": "a"}}},
			}
		}},
}
