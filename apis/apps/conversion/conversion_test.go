package conversion

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
	// the API server hands integral numbers over as int64, as sigs.k8s.io/yaml does
	return u
}

func convertCopy(t *testing.T, in *unstructured.Unstructured, to string) *unstructured.Unstructured {
	t.Helper()
	out := in.DeepCopy()
	require.NoError(t, Convert(out, to))
	return out
}

// The metadata an API server object carries, plus annotations and labels the
// mappings must leave alone.
const meta = `metadata:
  name: demo
  uid: 5c1d2f9e-0000-4000-8000-000000000001
  resourceVersion: "42"
  generation: 3
  labels:
    app: demo
    team.example.com/owner: "a/b"
  annotations:
    kubernetes.io/change-cause: "kubectl set image"
    example.com/unknown: '{"x":1}'
`

const dsSpec = `spec:
  selector:
    matchLabels: {app: demo}
  template:
    metadata:
      labels: {app: demo}
    spec:
      containers: [{name: main, image: nginx}]
      unknownPodField: kept
  burstReplicas: 250
  revisionHistoryLimit: 10
  minReadySeconds: 5
`

// Objects as a v1alpha1 client or storage would hand them over.
var alphaCases = []struct {
	name, kind, y string
	check         func(t *testing.T, beta *unstructured.Unstructured)
}{
	{name: "daemonset plain", kind: "DaemonSet", y: dsSpec + `  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {rollingUpdateType: Standard, maxUnavailable: 1, partition: "10%", paused: false}
status:
  currentNumberScheduled: 3
  numberMisscheduled: 0
  desiredNumberScheduled: 3
  numberReady: 3
  observedGeneration: 3
  updatedNumberScheduled: 3
  numberAvailable: 3
  daemonSetHash: 7d9f8c6b5
  conditions: [{type: X, status: "True"}]
`, check: func(t *testing.T, b *unstructured.Unstructured) {
		v, _, _ := unstructured.NestedString(b.Object, "status", "updateRevision")
		assert.Equal(t, "7d9f8c6b5", v)
		_, has, _ := unstructured.NestedFieldNoCopy(b.Object, "status", "daemonSetHash")
		assert.False(t, has, "daemonSetHash is v1alpha1 only")
		assert.NotContains(t, b.GetAnnotations(), StashAnnotation(V1alpha1), "nothing to carry")
	}},
	{name: "daemonset progressive true", kind: "DaemonSet", y: dsSpec + `  updateStrategy: {type: RollingUpdate, rollingUpdate: {rollingUpdateType: Standard, partition: 2}}
`, check: func(t *testing.T, b *unstructured.Unstructured) {
		v, _, _ := unstructured.NestedBool(b.Object, "spec", "scaleStrategy", "partitionedScaling")
		assert.True(t, v)
		assert.NotContains(t, b.GetAnnotations(), progressiveCreatePodAnnotation)
		assert.NotContains(t, b.GetAnnotations(), StashAnnotation(V1alpha1))
	} /* annotation added below */},
	{name: "daemonset progressive false", kind: "DaemonSet", y: dsSpec},
	{name: "daemonset surging defaults", kind: "DaemonSet", y: dsSpec + `  updateStrategy: {type: RollingUpdate, rollingUpdate: {rollingUpdateType: Surging}}
`, check: func(t *testing.T, b *unstructured.Unstructured) {
		ru, _, _ := unstructured.NestedMap(b.Object, "spec", "updateStrategy", "rollingUpdate")
		assert.Equal(t, map[string]interface{}{"rollingUpdateType": "Standard", "maxSurge": int64(1), "maxUnavailable": int64(0)}, ru,
			"the surge Surging meant is written out")
		assert.Contains(t, b.GetAnnotations(), StashAnnotation(V1alpha1), "Surging is carried for the way back")
	}},
	{name: "daemonset surging with maxSurge", kind: "DaemonSet", y: dsSpec + `  updateStrategy: {type: RollingUpdate, rollingUpdate: {rollingUpdateType: Surging, maxSurge: "20%", selector: {matchLabels: {pool: a}}}}
`, check: func(t *testing.T, b *unstructured.Unstructured) {
		ru, _, _ := unstructured.NestedMap(b.Object, "spec", "updateStrategy", "rollingUpdate")
		assert.Equal(t, "20%", ru["maxSurge"])
		assert.Equal(t, int64(0), ru["maxUnavailable"])
	}},
	{name: "daemonset in place, no status", kind: "DaemonSet", y: dsSpec + `  updateStrategy: {type: RollingUpdate, rollingUpdate: {rollingUpdateType: InPlaceIfPossible, maxUnavailable: "50%"}}
`},
	{name: "daemonset ondelete, empty hash", kind: "DaemonSet", y: dsSpec + `  updateStrategy: {type: OnDelete}
status: {daemonSetHash: "", numberReady: 0}
`},
	{name: "sidecarset namespace", kind: "SidecarSet", y: `spec:
  selector: {matchLabels: {app: demo}}
  namespace: team-a
  containers: [{name: proxy, image: envoy, podInjectPolicy: BeforeAppContainer}]
status: {matchedPods: 1, updatedPods: 1, readyPods: 1, latestRevision: demo-abc}
`, check: func(t *testing.T, b *unstructured.Unstructured) {
		sel, _, _ := unstructured.NestedStringMap(b.Object, "spec", "namespaceSelector", "matchLabels")
		assert.Equal(t, map[string]string{"kubernetes.io/metadata.name": "team-a"}, sel)
		_, has, _ := unstructured.NestedFieldNoCopy(b.Object, "spec", "namespace")
		assert.False(t, has)
	}},
	{name: "sidecarset namespaceSelector", kind: "SidecarSet", y: `spec:
  selector: {matchLabels: {app: demo}}
  namespaceSelector: {matchExpressions: [{key: env, operator: In, values: [prod]}]}
  containers: [{name: proxy, image: envoy}]
`},
	{name: "sidecarset namespace and selector (both, refused by v1alpha1 CEL but stored earlier)", kind: "SidecarSet", y: `spec:
  selector: {matchLabels: {app: demo}}
  namespace: team-a
  namespaceSelector: {matchLabels: {env: prod}}
  containers: [{name: proxy, image: envoy}]
`},
	{name: "sidecarset empty namespace", kind: "SidecarSet", y: `spec:
  selector: {matchLabels: {app: demo}}
  namespace: ""
  containers: [{name: proxy, image: envoy}]
`},
	{name: "sidecarset canonical selector written at v1alpha1", kind: "SidecarSet", y: `spec:
  selector: {matchLabels: {app: demo}}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: team-a}}
  containers: [{name: proxy, image: envoy}]
`},
	{name: "acj", kind: "AdvancedCronJob", y: `spec:
  schedule: "*/1 * * * *"
  template: {broadcastJobTemplate: {spec: {template: {spec: {containers: [{name: a, image: b}]}}}}}
status: {type: BroadcastJob}
`},
	{name: "broadcastjob", kind: "BroadcastJob", y: `spec: {template: {spec: {containers: [{name: a, image: b}]}}, completionPolicy: {type: Always}}
`},
	{name: "imagepulljob", kind: "ImagePullJob", y: `spec: {image: nginx, completionPolicy: {type: Always}, parallelism: 2}
`},
	{name: "nodeimage", kind: "NodeImage", y: `spec: {images: {nginx: {pullSecrets: [{namespace: flotilla-node, name: s, mode: batch}], tags: [{tag: "1.25", version: 2}]}}}
status: {desired: 1, imageStatuses: {nginx: {tags: [{tag: "1.25", phase: Succeeded, version: 2}]}}}
`},
	{name: "statefulset", kind: "StatefulSet", y: `spec: {replicas: 3, reserveOrdinals: [1, "3-5"]}
`},
}

func alphaObject(t *testing.T, name, kind, y string) *unstructured.Unstructured {
	u := obj(t, "apiVersion: apps.kruise.io/v1alpha1\nkind: "+kind+"\n"+meta+y)
	switch name {
	case "daemonset progressive true":
		addAnnotation(u, progressiveCreatePodAnnotation, "true")
	case "daemonset progressive false":
		addAnnotation(u, progressiveCreatePodAnnotation, "false")
	}
	if strings.HasPrefix(name, "sidecarset") {
		addLabel(u, sidecarSetCustomVersionLabel, "v2")
	}
	if name == "sidecarset namespaceSelector" {
		addLabel(u, sidecarSetCustomVersionLabel, "")
	}
	return u
}

func addAnnotation(u *unstructured.Unstructured, k, v string) {
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	u.SetAnnotations(a)
}

func addLabel(u *unstructured.Unstructured, k, v string) {
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[k] = v
	u.SetLabels(l)
}

// v1alpha1 -> v1beta1 -> v1alpha1 gives the object back unchanged, every
// field the other version cannot hold included.
func TestAlphaRoundTrip(t *testing.T) {
	for _, c := range alphaCases {
		t.Run(c.name, func(t *testing.T) {
			in := alphaObject(t, c.name, c.kind, c.y)
			beta := convertCopy(t, in, "apps.kruise.io/v1beta1")
			assert.Equal(t, "apps.kruise.io/v1beta1", beta.GetAPIVersion())
			if c.check != nil {
				c.check(t, beta)
			}
			back := convertCopy(t, beta, "v1alpha1")
			assert.Equal(t, in.Object, back.Object)
			// the unrelated metadata is untouched at v1beta1 too
			assert.Equal(t, "kubectl set image", beta.GetAnnotations()["kubernetes.io/change-cause"])
			assert.Equal(t, `{"x":1}`, beta.GetAnnotations()["example.com/unknown"])
			assert.Equal(t, "a/b", beta.GetLabels()["team.example.com/owner"])
		})
	}
}

// Objects written at v1beta1, including fields and combinations v1alpha1
// has no room for.
var betaCases = []struct {
	name, kind, y string
	check         func(t *testing.T, alpha *unstructured.Unstructured)
}{
	{name: "daemonset partitionedScaling", kind: "DaemonSet", y: dsSpec + `  scaleStrategy: {partitionedScaling: true}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {rollingUpdateType: Standard, partition: 1}}
status: {updateRevision: abc, numberReady: 1}
`, check: func(t *testing.T, a *unstructured.Unstructured) {
		assert.Equal(t, "true", a.GetAnnotations()[progressiveCreatePodAnnotation])
		v, _, _ := unstructured.NestedString(a.Object, "status", "daemonSetHash")
		assert.Equal(t, "abc", v)
		_, has, _ := unstructured.NestedFieldNoCopy(a.Object, "spec", "scaleStrategy")
		assert.False(t, has)
		assert.NotContains(t, a.GetAnnotations(), StashAnnotation(V1beta1))
	}},
	{name: "daemonset empty scaleStrategy", kind: "DaemonSet", y: dsSpec + `  scaleStrategy: {}
`, check: func(t *testing.T, a *unstructured.Unstructured) {
		assert.NotContains(t, a.GetAnnotations(), progressiveCreatePodAnnotation, "off")
		assert.Contains(t, a.GetAnnotations(), StashAnnotation(V1beta1), "the empty object is carried")
	}},
	{name: "daemonset partitionedScaling false", kind: "DaemonSet", y: dsSpec + `  scaleStrategy: {partitionedScaling: false}
`},
	{name: "daemonset annotation and field disagree", kind: "DaemonSet", y: dsSpec + `  scaleStrategy: {partitionedScaling: false}
`, check: func(t *testing.T, a *unstructured.Unstructured) {
		assert.NotEqual(t, "true", a.GetAnnotations()[progressiveCreatePodAnnotation], "the v1beta1 field decides")
	}},
	{name: "daemonset no annotations at all", kind: "DaemonSet", y: dsSpec + `  scaleStrategy: {partitionedScaling: true}
`},
	{name: "sidecarset customVersion and selector", kind: "SidecarSet", y: `spec:
  selector: {matchLabels: {app: demo}}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: team-a}}
  customVersion: v3
  containers: [{name: proxy, image: envoy}]
`, check: func(t *testing.T, a *unstructured.Unstructured) {
		assert.Equal(t, "v3", a.GetLabels()[sidecarSetCustomVersionLabel])
		sel, _, _ := unstructured.NestedStringMap(a.Object, "spec", "namespaceSelector", "matchLabels")
		assert.Equal(t, map[string]string{"kubernetes.io/metadata.name": "team-a"}, sel, "a selector stays a selector")
		assert.NotContains(t, a.GetAnnotations(), StashAnnotation(V1beta1))
	}},
	{name: "sidecarset empty customVersion", kind: "SidecarSet", y: `spec:
  selector: {matchLabels: {app: demo}}
  customVersion: ""
  containers: [{name: proxy, image: envoy}]
`},
	{name: "sidecarset label and customVersion disagree", kind: "SidecarSet", y: `spec:
  selector: {matchLabels: {app: demo}}
  customVersion: v4
  containers: [{name: proxy, image: envoy}]
`, check: func(t *testing.T, a *unstructured.Unstructured) {
		assert.Equal(t, "v4", a.GetLabels()[sidecarSetCustomVersionLabel], "the v1beta1 field decides")
	}},
	{name: "acj", kind: "AdvancedCronJob", y: `spec:
  schedule: "@hourly"
  concurrencyPolicy: Replace
  template: {imageListPullJobTemplate: {spec: {images: [nginx], completionPolicy: {type: Always}}}}
`},
}

func betaObject(t *testing.T, name, kind, y string) *unstructured.Unstructured {
	u := obj(t, "apiVersion: apps.kruise.io/v1beta1\nkind: "+kind+"\n"+meta+y)
	switch name {
	case "daemonset annotation and field disagree":
		addAnnotation(u, progressiveCreatePodAnnotation, "true")
	case "daemonset no annotations at all":
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
	case "sidecarset label and customVersion disagree":
		addLabel(u, sidecarSetCustomVersionLabel, "v1")
	}
	return u
}

// v1beta1 -> v1alpha1 -> v1beta1 gives the object back unchanged.
func TestBetaRoundTrip(t *testing.T) {
	for _, c := range betaCases {
		t.Run(c.name, func(t *testing.T) {
			in := betaObject(t, c.name, c.kind, c.y)
			alpha := convertCopy(t, in, "apps.kruise.io/v1alpha1")
			assert.Equal(t, "apps.kruise.io/v1alpha1", alpha.GetAPIVersion())
			if c.check != nil {
				c.check(t, alpha)
			}
			back := convertCopy(t, alpha, "v1beta1")
			assert.Equal(t, in.Object, back.Object)
		})
	}
}

// Once a v1beta1 client changes a field the carried v1alpha1 values were
// derived from, the change wins: the stale annotation is not applied.
func TestStaleStashIsNotApplied(t *testing.T) {
	in := alphaObject(t, "", "DaemonSet", dsSpec+`  updateStrategy: {type: RollingUpdate, rollingUpdate: {rollingUpdateType: Surging}}
`)
	beta := convertCopy(t, in, V1beta1)
	require.Contains(t, beta.GetAnnotations(), StashAnnotation(V1alpha1))
	require.NoError(t, unstructured.SetNestedField(beta.Object, int64(2), "spec", "updateStrategy", "rollingUpdate", "maxSurge"))

	alpha := convertCopy(t, beta, V1alpha1)
	ru, _, _ := unstructured.NestedMap(alpha.Object, "spec", "updateStrategy", "rollingUpdate")
	assert.Equal(t, map[string]interface{}{"rollingUpdateType": "Standard", "maxSurge": int64(2), "maxUnavailable": int64(0)}, ru)
	assert.NotContains(t, alpha.GetAnnotations(), StashAnnotation(V1alpha1), "the stale annotation is dropped")
	assert.NotContains(t, alpha.GetAnnotations(), StashAnnotation(V1beta1))

	// a stash that does not parse is dropped too, never an error
	addAnnotation(beta, StashAnnotation(V1alpha1), "{not json")
	alpha = convertCopy(t, beta, V1alpha1)
	assert.NotContains(t, alpha.GetAnnotations(), StashAnnotation(V1alpha1))
}

// A client-written annotation under the owned prefix is not carried into
// the other version, where it could be mistaken for a stash.
func TestOwnedAnnotationsAreNotCarried(t *testing.T) {
	in := alphaObject(t, "", "DaemonSet", dsSpec)
	addAnnotation(in, StashAnnotation(V1alpha1), `{"rollingUpdateType":{"restore":{"/spec/updateStrategy/rollingUpdate/rollingUpdateType":"Surging"}}}`)
	beta := convertCopy(t, in, V1beta1)
	assert.NotContains(t, beta.GetAnnotations(), StashAnnotation(V1alpha1))
	back := convertCopy(t, beta, V1alpha1)
	_, has, _ := unstructured.NestedString(back.Object, "spec", "updateStrategy", "rollingUpdate", "rollingUpdateType")
	assert.False(t, has, "nothing was restored from a client's annotation")
}

func TestIdenticalKindsOnlyChangeAPIVersion(t *testing.T) {
	for _, kind := range Kinds() {
		if NeedsWebhook(kind) {
			continue
		}
		in := obj(t, "apiVersion: apps.kruise.io/v1alpha1\nkind: "+kind+"\n"+meta+"spec: {a: 1}\nstatus: {b: x}\n")
		out := convertCopy(t, in, V1beta1)
		want := in.DeepCopy()
		want.SetAPIVersion("apps.kruise.io/v1beta1")
		assert.Equal(t, want.Object, out.Object, kind)
	}
	assert.Equal(t, []string{"DaemonSet", "SidecarSet"}, func() (out []string) {
		for _, k := range Kinds() {
			if NeedsWebhook(k) {
				out = append(out, k)
			}
		}
		return out
	}())
}

func TestBadInputNamesTheField(t *testing.T) {
	cases := []struct {
		name, y, to, want string
	}{
		{"unknown kind", "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\n", V1beta1, `kind "CloneSet"`},
		{"other group", "apiVersion: policy.kruise.io/v1alpha1\nkind: PodUnavailableBudget\n", V1beta1, `apiVersion "policy.kruise.io/v1alpha1"`},
		{"unknown target", "apiVersion: apps.kruise.io/v1alpha1\nkind: DaemonSet\n", "v2", `target version "v2"`},
		{"target of another group", "apiVersion: apps.kruise.io/v1alpha1\nkind: DaemonSet\n", "apps/v1", `target apiVersion "apps/v1"`},
		{"scaleStrategy not an object", "apiVersion: apps.kruise.io/v1beta1\nkind: DaemonSet\nspec: {scaleStrategy: [1]}\n", V1alpha1, "spec.scaleStrategy: must be an object"},
		{"partitionedScaling not a bool", "apiVersion: apps.kruise.io/v1beta1\nkind: DaemonSet\nspec: {scaleStrategy: {partitionedScaling: \"yes\"}}\n", V1alpha1, "spec.scaleStrategy.partitionedScaling: must be a boolean"},
		{"annotation not a string", "apiVersion: apps.kruise.io/v1alpha1\nkind: DaemonSet\nmetadata: {annotations: {daemonset.kruise.io/progressive-create-pod: true}}\n", V1beta1, "metadata.annotations[daemonset.kruise.io/progressive-create-pod]: must be a string"},
		{"namespace not a string", "apiVersion: apps.kruise.io/v1alpha1\nkind: SidecarSet\nspec: {namespace: 3}\n", V1beta1, "spec.namespace: must be a string"},
		{"rollingUpdate not an object", "apiVersion: apps.kruise.io/v1alpha1\nkind: DaemonSet\nspec: {updateStrategy: {rollingUpdate: x}}\n", V1beta1, "spec.updateStrategy.rollingUpdate: must be an object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := obj(t, c.y)
			before := u.DeepCopy()
			err := Convert(u, c.to)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, before.Object, u.Object, "a failed conversion leaves the object alone")
		})
	}
	assert.Error(t, Convert(&unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet", "spec": map[string]interface{}{"x": int(1)}}}, V1beta1),
		"a non-JSON value is an error, not a panic")
	assert.Error(t, Convert(nil, V1beta1))
}

func TestSameVersionIsANoOp(t *testing.T) {
	in := alphaObject(t, "daemonset progressive true", "DaemonSet", dsSpec)
	out := convertCopy(t, in, "apps.kruise.io/v1alpha1")
	assert.Equal(t, in.Object, out.Object)
	_ = runtime.DeepCopyJSON(out.Object)
}

// At v1beta1 the fields decide (OpenKruise v1.9's controllers read only
// them): a leftover v1alpha1 label or annotation on a v1beta1 object does
// not switch the feature on for a v1alpha1 reader.
func TestBetaFieldsDecide(t *testing.T) {
	ds := betaObject(t, "", "DaemonSet", dsSpec)
	addAnnotation(ds, progressiveCreatePodAnnotation, "true")
	a := convertCopy(t, ds, V1alpha1)
	assert.NotContains(t, a.GetAnnotations(), progressiveCreatePodAnnotation)
	assert.Equal(t, ds.Object, convertCopy(t, a, V1beta1).Object, "and the leftover comes back")

	scs := betaObject(t, "", "SidecarSet", "spec: {selector: {matchLabels: {a: b}}}\n")
	addLabel(scs, sidecarSetCustomVersionLabel, "v1")
	a = convertCopy(t, scs, V1alpha1)
	assert.NotContains(t, a.GetLabels(), sidecarSetCustomVersionLabel)
	assert.Equal(t, scs.Object, convertCopy(t, a, V1beta1).Object)
}
