package apis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/apis/apps/conversion"
	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/apis/testing/fixtures"
)

// These tests run the generated CRDs through the API server's own CRD
// validation (structural schema, defaults, CEL compilation and estimated
// cost) and then admit objects offline with the same defaulting, pruning,
// OpenAPI and CEL validation code, so schema problems show up without a
// cluster. test/e2e/apis repeats the object checks against a real server.

const crdDir = "../deploy/base/crds"

type version struct {
	crd        *apiextensions.CustomResourceDefinition
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

func loadCRDs(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(crdDir, "*", "*.yaml"))
	require.NoError(t, err)
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict(b, crd), f)
		require.Equal(t, filepath.Join(crd.Spec.Names.Plural, crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml"),
			filepath.Join(filepath.Base(filepath.Dir(f)), filepath.Base(f)), "file naming")
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
		out[crd.Name] = crd
	}
	require.Len(t, out, 16, "one CRD per kind")
	return out
}

func toInternal(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensions.CustomResourceDefinition {
	in := &apiextensions.CustomResourceDefinition{}
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, in, nil))
	return in
}

func TestCRDsPassAPIServerValidation(t *testing.T) {
	for name, crd := range loadCRDs(t) {
		t.Run(name, func(t *testing.T) {
			errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), toInternal(t, crd))
			assert.Empty(t, errs.ToAggregate(), "the API server would reject this CRD")
		})
	}
}

// The top kustomization lists one directory per CRD and each directory's kustomization lists its CRD, so
// overlays can pick CRDs one by one.
func TestKustomizationListsEveryCRD(t *testing.T) {
	type kustomization struct {
		Resources []string `json:"resources"`
	}
	read := func(path string) kustomization {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var k kustomization
		require.NoError(t, yaml.Unmarshal(b, &k))
		return k
	}
	files, err := filepath.Glob(filepath.Join(crdDir, "*", "*_*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var dirs []string
	for _, f := range files {
		dir := filepath.Dir(f)
		dirs = append(dirs, filepath.Base(dir))
		assert.Equal(t, []string{filepath.Base(f)}, read(filepath.Join(dir, "kustomization.yaml")).Resources, dir)
	}
	assert.ElementsMatch(t, dirs, read(filepath.Join(crdDir, "kustomization.yaml")).Resources)
}

// Every kind OpenKruise v1.9 serves at v1alpha1 and v1beta1 is served at
// both. Kinds whose versions have identical schemas use conversion strategy
// None: the API server only rewrites apiVersion, so the schemas,
// subresources and columns must be equal, otherwise reading through one
// version would prune or mis-validate fields of the other. Kinds that need
// the conversion webhook (apis/apps/conversion.NeedsWebhook) differ exactly
// in the fields the conversion maps, no more.
func TestServedVersions(t *testing.T) {
	crds := loadCRDs(t)
	plural := map[string]string{"DaemonSet": "daemonsets", "SidecarSet": "sidecarsets", "AdvancedCronJob": "advancedcronjobs",
		"BroadcastJob": "broadcastjobs", "ImagePullJob": "imagepulljobs", "NodeImage": "nodeimages", "StatefulSet": "statefulsets"}
	require.ElementsMatch(t, conversion.Kinds(), keys(plural))
	// The fields only one version has (JSON paths below the schema root).
	mapped := map[string][]string{
		"DaemonSet": {
			"v1alpha1:/properties/status/properties/daemonSetHash",
			"v1beta1:/properties/spec/properties/scaleStrategy",
			"v1beta1:/properties/status/properties/updateRevision",
		},
		"SidecarSet": {
			"v1alpha1:/properties/spec/properties/namespace",
			"v1beta1:/properties/spec/properties/customVersion",
		},
	}
	for _, kind := range conversion.Kinds() {
		t.Run(kind, func(t *testing.T) {
			crd := crds[plural[kind]+".apps.kruise.io"]
			require.NotNil(t, crd)
			require.Len(t, crd.Spec.Versions, 2)
			vs := map[string]apiextensionsv1.CustomResourceDefinitionVersion{}
			for _, v := range crd.Spec.Versions {
				vs[v.Name] = v
				assert.True(t, v.Served, "%s served", v.Name)
			}
			a, b := vs["v1alpha1"], vs["v1beta1"]
			require.NotNil(t, a.Schema)
			require.NotNil(t, b.Schema)
			assert.Equal(t, a.Subresources, b.Subresources)
			if !conversion.NeedsWebhook(kind) {
				assert.Equal(t, apiextensionsv1.NoneConverter, crd.Spec.Conversion.Strategy)
				assert.True(t, b.Storage, "v1beta1 is the storage version, as in OpenKruise v1.9")
				assert.True(t, reflect.DeepEqual(a.Schema, b.Schema), "v1alpha1 and v1beta1 schemas differ")
				assert.Equal(t, a.AdditionalPrinterColumns, b.AdditionalPrinterColumns)
				return
			}
			// The versions differ: the CRD converts by webhook (the
			// controller's Service, apis/crd-patches) and stores v1beta1, the
			// preferred version, as OpenKruise v1.9 does, so the garbage
			// collector and namespace deletion never need the webhook.
			require.NotNil(t, crd.Spec.Conversion)
			assert.Equal(t, apiextensionsv1.WebhookConverter, crd.Spec.Conversion.Strategy)
			if assert.NotNil(t, crd.Spec.Conversion.Webhook) && assert.NotNil(t, crd.Spec.Conversion.Webhook.ClientConfig) &&
				assert.NotNil(t, crd.Spec.Conversion.Webhook.ClientConfig.Service) {
				svc := crd.Spec.Conversion.Webhook.ClientConfig.Service
				assert.Equal(t, "flotilla-system", svc.Namespace)
				// SidecarSet: a Service of its own publishing not-ready addresses,
				// since the controller's readiness needs conversion (issue 23);
				// DaemonSet's only Service publishes them itself.
				assert.Equal(t, map[string]string{"DaemonSet": "daemonset-controller-webhook",
					"SidecarSet": "sidecarset-controller-conversion"}[kind], svc.Name)
				if assert.NotNil(t, svc.Path) {
					assert.Equal(t, "/convert", *svc.Path)
				}
			}
			assert.Equal(t, []string{"v1"}, crd.Spec.Conversion.Webhook.ConversionReviewVersions)
			assert.True(t, b.Storage, "v1beta1 is the storage version, as in OpenKruise v1.9")
			assert.False(t, a.Storage)
			assert.ElementsMatch(t, mapped[kind], onlyInOne(a.Schema.OpenAPIV3Schema, b.Schema.OpenAPIV3Schema))
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// onlyInOne lists the properties one schema has and the other lacks
// ("v1alpha1:<path>" / "v1beta1:<path>"), and reports every other
// difference as "differs:<path>".
func onlyInOne(a, b *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	var walk func(p string, a, b *apiextensionsv1.JSONSchemaProps)
	walk = func(p string, a, b *apiextensionsv1.JSONSchemaProps) {
		for name, pa := range a.Properties {
			pb, ok := b.Properties[name]
			if !ok {
				out = append(out, "v1alpha1:"+p+"/properties/"+name)
				continue
			}
			walk(p+"/properties/"+name, &pa, &pb)
		}
		for name := range b.Properties {
			if _, ok := a.Properties[name]; !ok {
				out = append(out, "v1beta1:"+p+"/properties/"+name)
			}
		}
		ca, cb := *a, *b
		ca.Properties, cb.Properties = nil, nil
		// required lists and CEL rules are compared after the properties:
		// they may only differ where they mention a mapped field.
		if !reflect.DeepEqual(ca, cb) && !sameButFor(ca, cb) {
			out = append(out, "differs:"+p)
		}
	}
	walk("", a, b)
	return out
}

// sameButFor accepts the differences the version mapping causes: the
// DaemonSet status's required list (observedGeneration and numberAvailable
// are optional in OpenKruise's v1beta1) and the rollingUpdate rules that
// mention v1alpha1's Surging; the SidecarSet spec's namespace rule.
func sameButFor(a, b apiextensionsv1.JSONSchemaProps) bool {
	a.Required, b.Required = nil, nil
	strip := func(rules apiextensionsv1.ValidationRules) apiextensionsv1.ValidationRules {
		var out apiextensionsv1.ValidationRules
		for _, r := range rules {
			if strings.Contains(r.Rule, "Surging") || strings.Contains(r.Rule, "self.namespace") ||
				r.Message == "spec.updateStrategy.rollingUpdate.maxUnavailable cannot be 0 when maxSurge is 0" {
				continue
			}
			out = append(out, r)
		}
		return out
	}
	a.XValidations, b.XValidations = strip(a.XValidations), strip(b.XValidations)
	a.Enum, b.Enum = nil, nil // rollingUpdateType: Surging is v1alpha1 only
	return reflect.DeepEqual(a, b)
}

func versionFor(t *testing.T, crds map[string]*apiextensionsv1.CustomResourceDefinition, k fixtures.Kind) *version {
	crd := crds[k.Resource+"."+k.Group]
	require.NotNil(t, crd, "no CRD for %s", k.Resource)
	in := toInternal(t, crd)
	for _, v := range in.Spec.Versions {
		if v.Name != k.Version {
			continue
		}
		var s *apiextensions.JSONSchemaProps
		if v.Schema != nil {
			s = v.Schema.OpenAPIV3Schema
		} else if in.Spec.Validation != nil { // shared by all versions
			s = in.Spec.Validation.OpenAPIV3Schema
		}
		require.NotNil(t, s, "no schema")
		st, err := structuralschema.NewStructural(s)
		require.NoError(t, err)
		val, _, err := apiservervalidation.NewSchemaValidator(s)
		require.NoError(t, err)
		return &version{crd: in, structural: st, validator: val, cel: cel.NewValidator(st, true, celconfig.PerCallLimit)}
	}
	t.Fatalf("version %s not served by %s", k.Version, crd.Name)
	return nil
}

// admit mimics the API server's create/update path for a custom resource:
// default, prune, then OpenAPI, list-type and CEL validation.
func (v *version) admit(obj, old map[string]interface{}) field.ErrorList {
	structuraldefaulting.Default(obj, v.structural)
	pruning.Prune(obj, v.structural, true)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, v.validator)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	var oldObj interface{}
	if old != nil {
		oldObj = old
	}
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

func jsonCopy(o map[string]interface{}) map[string]interface{} {
	// the API server decodes JSON numbers that are integral as int64
	b, _ := json.Marshal(o)
	var out map[string]interface{}
	_ = utiljson.Unmarshal(b, &out)
	return out
}

func TestMinimalObjectsAreValidAndDefaulted(t *testing.T) {
	crds := loadCRDs(t)
	for _, k := range fixtures.Kinds {
		t.Run(k.APIVersion()+"/"+k.Kind, func(t *testing.T) {
			v := versionFor(t, crds, k)
			obj := jsonCopy(fixtures.Minimal(k, "demo", "default"))
			require.Empty(t, v.admit(obj, nil).ToAggregate())
			for _, d := range fixtures.Defaults[k.Kind] {
				got, ok := fixtures.Get(obj, d.Path)
				if assert.True(t, ok, "default %s missing", d.Path) {
					assert.Equal(t, fmt.Sprint(d.Value), fmt.Sprint(got), d.Path)
				}
			}
			// an update to an identical object passes transition rules too
			require.Empty(t, v.admit(jsonCopy(obj), obj).ToAggregate())
		})
	}
}

func TestInvalidSpecsAreRejected(t *testing.T) {
	crds := loadCRDs(t)
	require.GreaterOrEqual(t, len(fixtures.InvalidSpecs), 15)
	for _, c := range fixtures.InvalidSpecs {
		t.Run(c.Name, func(t *testing.T) {
			k := c.KindFor()
			v := versionFor(t, crds, k)
			obj := jsonCopy(fixtures.Minimal(k, "demo", "default"))
			if c.Mutate != nil {
				c.Mutate(obj)
			}
			obj = jsonCopy(obj)
			var errs field.ErrorList
			if c.Update != nil {
				require.Empty(t, v.admit(obj, nil).ToAggregate(), "the object before the update must be valid")
				upd := jsonCopy(obj)
				c.Update(upd)
				errs = v.admit(jsonCopy(upd), obj)
			} else {
				errs = v.admit(obj, nil)
			}
			require.NotEmpty(t, errs, "expected the spec to be rejected")
			msg := errs.ToAggregate().Error()
			assert.True(t, strings.Contains(msg, c.WantField), "error %q does not name %s", msg, c.WantField)
		})
	}
}

// The limits the controllers enforce in code (apps/pub) are the CRDs' own, and
// the widest objects they allow are admitted within the CEL cost budget.
func TestWorkloadLimitsMatchPub(t *testing.T) {
	crds := loadCRDs(t)
	for _, name := range []string{"clonesets.apps.kruise.io", "statefulsets.apps.kruise.io"} {
		crd := crds[name]
		require.NotNil(t, crd, name)
		for _, v := range crd.Spec.Versions {
			root := v.Schema.OpenAPIV3Schema
			replicas := root.Properties["spec"].Properties["replicas"]
			require.NotNil(t, replicas.Maximum, "%s/%s spec.replicas has no maximum", name, v.Name)
			assert.Equal(t, float64(pub.MaxReplicas), *replicas.Maximum, "%s/%s spec.replicas maximum", name, v.Name)
			var rules []string
			for _, r := range root.XValidations {
				rules = append(rules, r.Rule)
			}
			assert.Contains(t, rules, fmt.Sprintf("self.metadata.name.size() <= %d", pub.MaxWorkloadNameLength), "%s/%s", name, v.Name)
			if name == "statefulsets.apps.kruise.io" {
				var found bool
				for _, r := range root.Properties["spec"].Properties["reserveOrdinals"].XValidations {
					found = found || strings.HasSuffix(r.Rule, fmt.Sprintf(".sum() <= %d", pub.MaxReservedOrdinals))
				}
				assert.True(t, found, "%s/%s: no reserveOrdinals width rule with %d", name, v.Name, pub.MaxReservedOrdinals)
			}
		}
	}

	widest := func(k fixtures.Kind) map[string]interface{} {
		obj := jsonCopy(fixtures.Minimal(k, strings.Repeat("a", pub.MaxWorkloadNameLength), "default"))
		fixtures.Set(obj, "spec.replicas", pub.MaxReplicas)
		if k.Kind == "StatefulSet" {
			// 1000 entries (MaxItems), 100 ordinals each: exactly MaxReservedOrdinals.
			var ranges []interface{}
			for i := 0; i < 1000; i++ {
				ranges = append(ranges, fmt.Sprintf("%d-%d", i*1000, i*1000+99))
			}
			fixtures.Set(obj, "spec.reserveOrdinals", ranges)
		}
		return jsonCopy(obj)
	}
	for _, k := range fixtures.Kinds {
		if k.Kind != "CloneSet" && k.Kind != "StatefulSet" {
			continue
		}
		t.Run(k.APIVersion()+"/"+k.Kind, func(t *testing.T) {
			v := versionFor(t, crds, k)
			require.Empty(t, v.admit(widest(k), nil).ToAggregate(), "the widest allowed object must be admitted")
		})
	}
}
