package conversion

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/apis/apps/conversion"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// The real apps.kruise.io CRDs as kit/testenv applies them on a hack/cluster control plane: stored at v1beta1,
// strategy Webhook, the stanza pointed at the cluster's own conversion endpoint (hack/cluster/local-convert.sh,
// namespace flotilla-local), which is up whether or not a controller runs. Objects created at v1alpha1 read at
// v1beta1 with kubectl carry the mapped fields (DaemonSet progressive-create annotation ->
// scaleStrategy.partitionedScaling; SidecarSet spec.namespace -> namespaceSelector), and read back at v1alpha1
// unchanged.
func TestLocalEndpointConvertsTheSharedCRDs(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	ext, err := apiextensionsclient.NewForConfig(env.Config)
	require.NoError(t, err)
	for _, name := range []string{"daemonsets.apps.kruise.io", "sidecarsets.apps.kruise.io"} {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		c := crd.Spec.Conversion
		require.NotNil(t, c)
		require.Equal(t, apiextensionsv1.WebhookConverter, c.Strategy, name)
		require.NotNil(t, c.Webhook.ClientConfig.Service, name)
		if c.Webhook.ClientConfig.Service.Namespace != "flotilla-local" {
			t.Skipf("CRD %s converts through %s/%s, not a hack/cluster conversion endpoint (flotilla-local)", name,
				c.Webhook.ClientConfig.Service.Namespace, c.Webhook.ClientConfig.Service.Name)
		}
		for _, v := range crd.Spec.Versions {
			assert.Equal(t, v.Name == conversion.V1beta1, v.Storage, "%s stores v1beta1", name)
		}
	}

	ds := decode(t, `
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata:
  name: progressive
  annotations: {daemonset.kruise.io/progressive-create-pod: "true"}
spec:
  selector: {matchLabels: {app: progressive}}
  template:
    metadata: {labels: {app: progressive}}
    spec:
      nodeSelector: {flotilla.dev/no-such-node: "true"}
      containers: [{name: main, image: registry.example/agent:v1}]
`)
	ssName := ns + "-by-namespace"
	ss := decode(t, `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: by-namespace}
spec:
  namespace: default
  selector: {matchLabels: {app: no-such-app}}
  containers: [{name: sidecar, image: registry.example/sidecar:v1}]
`)
	ss.SetName(ssName)
	alpha := func(resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: conversion.Group, Version: conversion.V1alpha1, Resource: resource}
	}
	_, err = env.Dynamic().Resource(alpha("daemonsets")).Namespace(ns).Create(ctx, ds, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Dynamic().Resource(alpha("sidecarsets")).Delete(context.Background(), ssName, metav1.DeleteOptions{})
	})
	_, err = env.Dynamic().Resource(alpha("sidecarsets")).Create(ctx, ss, metav1.CreateOptions{})
	require.NoError(t, err)

	kubectl := func(args ...string) *unstructured.Unstructured {
		t.Helper()
		cmd := exec.Command("kubectl", append([]string{"--kubeconfig", env.KubeconfigPath, "-o", "json"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), stderr.String())
		obj := &unstructured.Unstructured{}
		require.NoError(t, json.Unmarshal(out, &obj.Object))
		return obj
	}

	got := kubectl("get", "daemonsets.v1beta1.apps.kruise.io", "-n", ns, "progressive")
	assert.Equal(t, "apps.kruise.io/v1beta1", got.GetAPIVersion())
	partitioned, found, _ := unstructured.NestedBool(got.Object, "spec", "scaleStrategy", "partitionedScaling")
	assert.True(t, found && partitioned, "progressive-create-pod became scaleStrategy.partitionedScaling: %v", got.Object["spec"])
	back := kubectl("get", "daemonsets.v1alpha1.apps.kruise.io", "-n", ns, "progressive")
	assert.Equal(t, "true", back.GetAnnotations()["daemonset.kruise.io/progressive-create-pod"])
	_, found, _ = unstructured.NestedFieldNoCopy(back.Object, "spec", "scaleStrategy")
	assert.False(t, found, "v1alpha1 has no scaleStrategy")

	got = kubectl("get", "sidecarsets.v1beta1.apps.kruise.io", ssName)
	assert.Equal(t, "apps.kruise.io/v1beta1", got.GetAPIVersion())
	sel, found, _ := unstructured.NestedMap(got.Object, "spec", "namespaceSelector")
	require.True(t, found, "spec.namespace became namespaceSelector: %v", got.Object["spec"])
	assert.Equal(t, map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "default"}}, sel)
	_, found, _ = unstructured.NestedFieldNoCopy(got.Object, "spec", "namespace")
	assert.False(t, found, "v1beta1 has no spec.namespace")
	back = kubectl("get", "sidecarsets.v1alpha1.apps.kruise.io", ssName)
	ns2, _, _ := unstructured.NestedString(back.Object, "spec", "namespace")
	assert.Equal(t, "default", ns2, "read back at v1alpha1 unchanged")
}
