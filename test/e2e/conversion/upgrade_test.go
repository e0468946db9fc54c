// Package conversion tests the CRD upgrade of issue 23 through the real API server: objects written while the CRDs
// served v1alpha1 only are read at both versions once the new CRDs (v1alpha1 + v1beta1, deploy/base/crds) are
// applied, DaemonSet and SidecarSet through the conversion webhook kit/webhook serves with apis/apps/conversion.
//
// The shared apps.kruise.io CRDs are not touched (other tests run against them): each test copies the real CRDs
// under a group of its own, and its webhook maps that group to apps.kruise.io around Convert.
package conversion

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/apis/apps/conversion"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// kinds of the upgrade: plural, and objects written before it (at v1alpha1, in the test's namespace where
// namespaced), including the fields the two versions spell differently.
var upgradeKinds = []struct {
	plural     string
	namespaced bool
	objects    []string
}{
	{"daemonsets", true, []string{sampleDaemonSet, `
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata:
  name: surging
  annotations: {daemonset.kruise.io/progressive-create-pod: "true"}
spec:
  selector: {matchLabels: {app: surging}}
  template:
    metadata: {labels: {app: surging}}
    spec: {containers: [{name: main, image: registry.example/agent:v1}]}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {rollingUpdateType: Surging, maxSurge: 2}
`}},
	{"sidecarsets", false, []string{`
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: by-namespace
  labels: {apps.kruise.io/sidecarset-custom-version: v7}
spec:
  namespace: default
  selector: {matchLabels: {app: x}}
  containers: [{name: sidecar, image: registry.example/sidecar:v1}]
`}},
	{"advancedcronjobs", true, []string{`
apiVersion: apps.kruise.io/v1alpha1
kind: AdvancedCronJob
metadata: {name: nightly}
spec:
  schedule: "0 1 * * *"
  template:
    jobTemplate:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: main, image: registry.example/job:v1}]
`}},
	{"broadcastjobs", true, []string{`
apiVersion: apps.kruise.io/v1alpha1
kind: BroadcastJob
metadata: {name: once}
spec:
  paused: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: registry.example/job:v1}]
`}},
	{"imagepulljobs", true, []string{`
apiVersion: apps.kruise.io/v1alpha1
kind: ImagePullJob
metadata: {name: pull}
spec:
  image: registry.example/agent:v2
  completionPolicy: {type: Always}
`}},
}

const sampleDaemonSet = `
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata:
  name: sample-agent
  labels: {app: sample-agent}
spec:
  selector: {matchLabels: {app: sample-agent}}
  template:
    metadata: {labels: {app: sample-agent}}
    spec:
      nodeSelector: {type: kwok}
      containers: [{name: agent, image: registry.example/agent:v1}]
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {rollingUpdateType: InPlaceIfPossible, maxUnavailable: 1}
  lifecycle:
    preDelete:
      labelsHandler: {example.io/block-deleting: "true"}
`

// Issue 23 item 1, the CRD upgrade: objects created at v1alpha1 under the CRDs of before (v1alpha1 only) are read
// at both versions after the new CRDs are applied — unchanged at v1alpha1, as Convert maps them at v1beta1 — and an
// update at v1beta1 reads back at v1alpha1, for every kind that gained v1beta1; DaemonSet and SidecarSet through the
// conversion webhook (the shipped stanza, strategy Webhook, its client configuration pointed at this test's server),
// the others with strategy None.
func TestCRDUpgrade(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	group := ns + ".upgrade.test.flotilla.dev"
	url, caBundle := startConverter(t, group)
	ext, err := apiextensionsclient.NewForConfig(env.Config)
	require.NoError(t, err)
	crds := ext.ApiextensionsV1().CustomResourceDefinitions()
	ctx := context.Background()

	for _, kind := range upgradeKinds {
		t.Run(kind.plural, func(t *testing.T) {
			upgraded := loadCRD(t, env.RepoRoot, kind.plural)
			if len(upgraded.Spec.Versions) < 2 {
				t.Skipf("deploy/base/crds/%s serves one version: nothing to upgrade to yet", kind.plural)
			}
			upgraded.Name = kind.plural + "." + group
			upgraded.Spec.Group = group
			upgraded.ResourceVersion = ""
			before := upgraded.DeepCopy()
			before.Spec.Conversion = nil
			before.Spec.Versions = nil
			for _, v := range upgraded.Spec.Versions {
				if v.Name == conversion.V1alpha1 {
					v.Storage = true
					before.Spec.Versions = append(before.Spec.Versions, v)
				}
			}
			require.Len(t, before.Spec.Versions, 1)
			_, err := crds.Create(ctx, before, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = crds.Delete(context.Background(), upgraded.Name, metav1.DeleteOptions{}) })
			waitEstablished(t, crds, upgraded.Name)

			alpha := schema.GroupVersionResource{Group: group, Version: conversion.V1alpha1, Resource: kind.plural}
			beta := schema.GroupVersionResource{Group: group, Version: conversion.V1beta1, Resource: kind.plural}
			client := func(gvr schema.GroupVersionResource) interface {
				Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
				Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
				Update(context.Context, *unstructured.Unstructured, metav1.UpdateOptions, ...string) (*unstructured.Unstructured, error)
			} {
				if kind.namespaced {
					return env.Dynamic().Resource(gvr).Namespace(ns)
				}
				return env.Dynamic().Resource(gvr)
			}
			var written []*unstructured.Unstructured
			for _, doc := range kind.objects {
				obj := decode(t, doc)
				obj.SetAPIVersion(group + "/" + conversion.V1alpha1)
				if !kind.namespaced {
					obj.SetName(ns + "-" + obj.GetName())
					t.Cleanup(func() {
						_ = env.Dynamic().Resource(alpha).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
					})
				}
				var got *unstructured.Unstructured
				testenv.Eventually(t, 30*time.Second, func() (bool, error) { // the new kind reaches discovery
					got, err = client(alpha).Create(ctx, obj, metav1.CreateOptions{})
					return err == nil, err
				})
				written = append(written, got)
			}

			// The upgrade: the new CRD, as deploy/base/crds has it; a Webhook stanza calls this test's server.
			cur, err := crds.Get(ctx, upgraded.Name, metav1.GetOptions{})
			require.NoError(t, err)
			upgraded.ResourceVersion = cur.ResourceVersion
			shipped := upgraded.Spec.Conversion != nil && upgraded.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
			// Versions that differ ship strategy Webhook (apis/crd-patches): None would only relabel, and this test
			// fails on it (SidecarSet spec.namespace and DaemonSet Surging are lost). Only the stanza's client
			// configuration is replaced: this copy's group is the test's own.
			require.Equal(t, conversion.NeedsWebhook(written[0].GetKind()), shipped,
				"deploy/base/crds/%s: conversion strategy Webhook exactly where the versions differ", kind.plural)
			if shipped {
				require.NotNil(t, upgraded.Spec.Conversion.Webhook)
				require.NotNil(t, upgraded.Spec.Conversion.Webhook.ClientConfig)
				require.NotNil(t, upgraded.Spec.Conversion.Webhook.ClientConfig.Service, "the shipped stanza calls the controller's Service")
				upgraded.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
			}
			for _, v := range upgraded.Spec.Versions {
				assert.Equal(t, v.Name == conversion.V1beta1, v.Storage, "deploy/base/crds/%s stores v1beta1, as OpenKruise v1.9", kind.plural)
			}
			_, err = crds.Update(ctx, upgraded, metav1.UpdateOptions{})
			require.NoError(t, err)

			for _, w := range written {
				// At v1beta1 once the new version is served: what Convert makes of the object.
				want := w.DeepCopy()
				require.NoError(t, convertIn(want, group, conversion.V1beta1))
				var got *unstructured.Unstructured
				testenv.Eventually(t, 30*time.Second, func() (bool, error) {
					got, err = client(beta).Get(ctx, w.GetName(), metav1.GetOptions{})
					return err == nil, err
				})
				assert.Equal(t, want.Object["spec"], got.Object["spec"], "%s at v1beta1", w.GetName())
				assert.Equal(t, want.GetAnnotations(), got.GetAnnotations(), "%s at v1beta1", w.GetName())
				assert.Equal(t, want.GetLabels(), got.GetLabels(), "%s at v1beta1", w.GetName())

				// At v1alpha1: as written, nothing lost.
				back, err := client(alpha).Get(ctx, w.GetName(), metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, w.Object["spec"], back.Object["spec"], "%s at v1alpha1", w.GetName())
				assert.Equal(t, w.GetAnnotations(), back.GetAnnotations(), "%s at v1alpha1", w.GetName())
				assert.Equal(t, w.GetLabels(), back.GetLabels(), "%s at v1alpha1", w.GetName())

				// Written at v1beta1 (now the storage version where the CRD says so), read at v1alpha1.
				labels := got.GetLabels()
				if labels == nil {
					labels = map[string]string{}
				}
				labels["upgraded"] = "true"
				got.SetLabels(labels)
				_, err = client(beta).Update(ctx, got, metav1.UpdateOptions{})
				require.NoError(t, err)
				back, err = client(alpha).Get(ctx, w.GetName(), metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, "true", back.GetLabels()["upgraded"])
				assert.Equal(t, w.Object["spec"], back.Object["spec"], "%s at v1alpha1 after a v1beta1 update", w.GetName())
			}
			final, err := crds.Get(ctx, upgraded.Name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Contains(t, final.Status.StoredVersions, conversion.V1alpha1, "storedVersions keeps what was stored before")
		})
	}
}

// startConverter serves apis/apps/conversion.Convert for group (mapped to apps.kruise.io around the call) on
// 127.0.0.1 with kit/webhook's conversion handler.
func startConverter(t *testing.T, group string) (url string, caBundle []byte) {
	t.Helper()
	data, _, err := webhook.PlanCerts(time.Now(), nil, (&webhook.Options{ServiceName: "w", Namespace: "ns"}).CertPolicy())
	require.NoError(t, err)
	dir := t.TempDir()
	for _, k := range []string{webhook.KeyTLSCert, webhook.KeyTLSKey, webhook.KeyCACert} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, k), data[k], 0o600))
	}
	certs := webhook.NewFileCerts(dir)
	require.NoError(t, certs.Ensure(context.Background()))
	s := webhook.NewServer(webhook.ServerOptions{BindAddress: "127.0.0.1:0"}, certs, nil)
	s.RegisterConversion(webhook.ConversionPath, "upgrade-convert", func(obj *unstructured.Unstructured, to string) error {
		gv, err := schema.ParseGroupVersion(to)
		if err != nil {
			return err
		}
		return convertIn(obj, group, gv.Version)
	})
	require.NoError(t, s.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Run(ctx) }()
	testenv.Eventually(t, 10*time.Second, func() (bool, error) { return s.Ready() == nil, nil })
	return "https://" + s.Addr() + webhook.ConversionPath, data[webhook.KeyCACert]
}

// convertIn converts obj, whose group is group, to version with Convert (which knows apps.kruise.io only).
func convertIn(obj *unstructured.Unstructured, group, version string) error {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return err
	}
	obj.SetAPIVersion(conversion.Group + "/" + gv.Version)
	if err := conversion.Convert(obj, conversion.Group+"/"+version); err != nil {
		return err
	}
	obj.SetAPIVersion(group + "/" + version)
	return nil
}

func loadCRD(t *testing.T, root, plural string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "deploy", "base", "crds", plural, "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.Unmarshal(bytes.TrimPrefix(b, []byte("---\n")), &crd))
		if crd.Kind == "CustomResourceDefinition" {
			return &crd
		}
	}
	t.Fatalf("no CRD under deploy/base/crds/%s", plural)
	return nil
}

func decode(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	require.NoError(t, utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096).Decode(&m))
	obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(m)}
	return obj
}

func waitEstablished(t *testing.T, crds interface {
	Get(context.Context, string, metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}, name string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		got, err := crds.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
