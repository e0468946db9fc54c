package conversion

import (
	"fmt"
)

// Keys the mappings move between metadata and spec (the values of
// apis/apps/pub's DaemonSetProgressiveCreatePodKey and
// SidecarSetCustomVersionLabel, repeated so this package depends on nothing
// but apimachinery).
const (
	progressiveCreatePodAnnotation = "daemonset.kruise.io/progressive-create-pod"
	sidecarSetCustomVersionLabel   = "apps.kruise.io/sidecarset-custom-version"
	namespaceNameLabel             = "kubernetes.io/metadata.name"
)

var (
	rollingUpdateType    = p("spec", "updateStrategy", "rollingUpdate", "rollingUpdateType")
	rollingMaxSurge      = p("spec", "updateStrategy", "rollingUpdate", "maxSurge")
	rollingMaxUnavail    = p("spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
	progressiveAnno      = annotationPath(progressiveCreatePodAnnotation)
	dsScaleStrategy      = p("spec", "scaleStrategy")
	dsPartitionedScaling = p("spec", "scaleStrategy", "partitionedScaling")
	dsHashAlpha          = p("status", "daemonSetHash")
	dsHashBeta           = p("status", "updateRevision")

	scsNamespace         = p("spec", "namespace")
	scsNamespaceSelector = p("spec", "namespaceSelector")
	customVersionLabel   = labelPath(sidecarSetCustomVersionLabel)
	scsCustomVersion     = p("spec", "customVersion")
)

var daemonSetRules = []rule{
	{
		// v1alpha1's deprecated Surging is Standard with a surge: maxSurge
		// defaults to 1 and maxUnavailable to 0 (what OpenKruise's defaulting
		// and Flotilla's controller resolve for Surging). v1beta1 has no
		// Surging, so the conversion writes the surge out instead of
		// dropping it (OpenKruise writes plain Standard, which would then
		// resolve to maxUnavailable 1 and no surge).
		name:  "rollingUpdateType",
		alpha: []path{rollingUpdateType, rollingMaxSurge, rollingMaxUnavail},
		beta:  []path{rollingUpdateType, rollingMaxSurge, rollingMaxUnavail},
		toBeta: func(obj map[string]interface{}) error {
			t, ok, err := getString(obj, rollingUpdateType)
			if err != nil || !ok || t != "Surging" {
				return err
			}
			if err := setPath(obj, rollingUpdateType, "Standard"); err != nil {
				return err
			}
			if _, ok, err := getPath(obj, rollingMaxSurge); err != nil {
				return err
			} else if !ok {
				if err := setPath(obj, rollingMaxSurge, int64(1)); err != nil {
					return err
				}
			}
			if _, ok, err := getPath(obj, rollingMaxUnavail); err != nil {
				return err
			} else if !ok {
				return setPath(obj, rollingMaxUnavail, int64(0))
			}
			return nil
		},
		toAlp: func(map[string]interface{}) error { return nil },
	},
	{
		// v1alpha1 annotation progressive-create-pod: "true" is v1beta1
		// spec.scaleStrategy.partitionedScaling: true. Any other value of the
		// annotation means "off" to both OpenKruise and Flotilla and stays an
		// annotation at v1beta1, where nothing reads it; converting to
		// v1alpha1 sets the annotation from the field.
		name:  "partitionedScaling",
		alpha: []path{progressiveAnno},
		beta:  []path{progressiveAnno, dsScaleStrategy},
		toBeta: func(obj map[string]interface{}) error {
			v, ok, err := getString(obj, progressiveAnno)
			if err != nil || !ok || v != "true" {
				return err
			}
			if err := deletePath(obj, progressiveAnno); err != nil {
				return err
			}
			return setPath(obj, dsScaleStrategy, map[string]interface{}{"partitionedScaling": true})
		},
		toAlp: func(obj map[string]interface{}) error {
			v, ok, err := getPath(obj, dsPartitionedScaling)
			if err != nil {
				return err
			}
			if ok && v != nil {
				if _, isBool := v.(bool); !isBool {
					return fmt.Errorf("%s: must be a boolean, not %T", dsPartitionedScaling, v)
				}
			}
			if err := deletePath(obj, dsScaleStrategy); err != nil {
				return err
			}
			// At v1beta1 the field alone decides (OpenKruise v1.9's controller
			// reads only the field), so the annotation follows it.
			if err := deletePath(obj, progressiveAnno); err != nil {
				return err
			}
			if v == true {
				return setPath(obj, progressiveAnno, "true")
			}
			return nil
		},
	},
	{
		name:   "updateRevision",
		alpha:  []path{dsHashAlpha},
		beta:   []path{dsHashBeta},
		toBeta: func(obj map[string]interface{}) error { return move(obj, dsHashAlpha, dsHashBeta) },
		toAlp:  func(obj map[string]interface{}) error { return move(obj, dsHashBeta, dsHashAlpha) },
	},
}

var sidecarSetRules = []rule{
	{
		// v1alpha1 spec.namespace is v1beta1's selector on the namespace name
		// label every namespace carries (Kubernetes >= 1.21). v1alpha1 allows
		// namespace or namespaceSelector, not both; were both set, namespace
		// wins (as in OpenKruise) and the selector is kept in the stash.
		name:  "namespace",
		alpha: []path{scsNamespace, scsNamespaceSelector},
		beta:  []path{scsNamespaceSelector},
		toBeta: func(obj map[string]interface{}) error {
			ns, ok, err := getString(obj, scsNamespace)
			if err != nil || !ok {
				return err
			}
			if err := deletePath(obj, scsNamespace); err != nil {
				return err
			}
			if ns == "" {
				return nil
			}
			return setPath(obj, scsNamespaceSelector, map[string]interface{}{
				"matchLabels": map[string]interface{}{namespaceNameLabel: ns},
			})
		},
		toAlp: func(map[string]interface{}) error { return nil },
	},
	{
		// v1alpha1 label apps.kruise.io/sidecarset-custom-version is v1beta1
		// spec.customVersion. An empty label value means "none" and stays a
		// label at v1beta1, where nothing reads it.
		name:  "customVersion",
		alpha: []path{customVersionLabel},
		beta:  []path{customVersionLabel, scsCustomVersion},
		toBeta: func(obj map[string]interface{}) error {
			v, ok, err := getString(obj, customVersionLabel)
			if err != nil || !ok || v == "" {
				return err
			}
			if err := deletePath(obj, customVersionLabel); err != nil {
				return err
			}
			return setPath(obj, scsCustomVersion, v)
		},
		toAlp: func(obj map[string]interface{}) error {
			// At v1beta1 the field alone decides (OpenKruise v1.9 reads only
			// spec.customVersion), so the label follows it.
			v, _, err := getString(obj, scsCustomVersion)
			if err != nil {
				return err
			}
			if err := deletePath(obj, scsCustomVersion); err != nil {
				return err
			}
			if err := deletePath(obj, customVersionLabel); err != nil {
				return err
			}
			if v == "" {
				return nil
			}
			return setPath(obj, customVersionLabel, v)
		},
	},
}

// move renames a field (nothing when it is absent).
func move(obj map[string]interface{}, from, to path) error {
	v, ok, err := getPath(obj, from)
	if err != nil || !ok {
		return err
	}
	if err := deletePath(obj, from); err != nil {
		return err
	}
	return setPath(obj, to, v)
}
