package sidecarcontrol

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// WhitelistKey is the key of the whitelist in the controller's
// configuration ConfigMap (OpenKruise: kruise-configuration).
const WhitelistKey = "SidecarSet_PatchPodMetadata_WhiteList"

// ConfigMapName is the ConfigMap, in the controller's namespace, holding the
// whitelist. OpenKruise's name, so existing configuration carries over.
const ConfigMapName = "kruise-configuration"

// Whitelist is the JSON under WhitelistKey.
type Whitelist struct {
	Rules []WhitelistRule `json:"rules"`
}

// WhitelistRule allows annotation keys (regular expressions) to SidecarSets
// whose labels match Selector (all SidecarSets when nil).
type WhitelistRule struct {
	Selector                  *metav1.LabelSelector `json:"selector,omitempty"`
	AllowedAnnotationKeyExprs []string              `json:"allowedAnnotationKeyExprs"`
}

// ParseWhitelist decodes the ConfigMap data; nil when the key is absent.
func ParseWhitelist(data map[string]string) (*Whitelist, error) {
	raw, ok := data[WhitelistKey]
	if !ok || raw == "" {
		return nil, nil
	}
	w := &Whitelist{}
	if err := json.Unmarshal([]byte(raw), w); err != nil {
		return nil, fmt.Errorf("configmap key %s: %w", WhitelistKey, err)
	}
	return w, nil
}

// ReadWhitelist reads the whitelist from ConfigMapName in namespace ns of
// the cache; nil when the ConfigMap or its key is absent.
func ReadWhitelist(cms corelisters.ConfigMapLister, ns string) (*Whitelist, error) {
	cm, err := cms.ConfigMaps(ns).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ConfigMap %s/%s: %w", ns, ConfigMapName, err)
	}
	return ParseWhitelist(cm.Data)
}

// CheckPatchPodMetadata says whether set may patch pod annotations: with no
// whitelist (or no rule for set), only when defaultsAllowed (feature gate
// SidecarSetPatchPodMetadataDefaultsAllowed); otherwise every patched key
// must match an allowed expression of a rule selecting set. The error names
// the field and the key.
func CheckPatchPodMetadata(set *appsv1alpha1.SidecarSet, w *Whitelist, defaultsAllowed bool) error {
	if len(set.Spec.PatchPodMetadata) == 0 {
		return nil
	}
	var exprs []*regexp.Regexp
	if w != nil {
		for _, rule := range w.Rules {
			if rule.Selector != nil {
				sel, err := metav1.LabelSelectorAsSelector(rule.Selector)
				if err != nil {
					return fmt.Errorf("%s: rule selector: %w", WhitelistKey, err)
				}
				if !sel.Matches(labels.Set(set.Labels)) {
					continue
				}
			}
			for _, e := range rule.AllowedAnnotationKeyExprs {
				re, err := regexp.Compile(e)
				if err != nil {
					return fmt.Errorf("%s: expression %q: %w", WhitelistKey, e, err)
				}
				exprs = append(exprs, re)
			}
		}
	}
	if len(exprs) == 0 {
		if defaultsAllowed {
			return nil
		}
		if w == nil {
			return fmt.Errorf("spec.patchPodMetadata: no %s whitelist in ConfigMap %s and feature gate SidecarSetPatchPodMetadataDefaultsAllowed is off", WhitelistKey, ConfigMapName)
		}
		return fmt.Errorf("spec.patchPodMetadata: no %s rule selects sidecarset %s", WhitelistKey, set.Name)
	}
	for i, p := range set.Spec.PatchPodMetadata {
		for key := range p.Annotations {
			if !matchAny(key, exprs) {
				return fmt.Errorf("spec.patchPodMetadata[%d].annotations[%s]: key not allowed by %s", i, key, WhitelistKey)
			}
		}
	}
	return nil
}

func matchAny(key string, exprs []*regexp.Regexp) bool {
	for _, re := range exprs {
		if re.MatchString(key) {
			return true
		}
	}
	return false
}

// PatchAnnotations applies patches to a copy of annotations and returns it:
// Retain (or empty) adds missing keys only, Overwrite sets every key,
// MergePatchJson merges the value into an existing JSON value (RFC 7386)
// or sets it when absent. onlyUpgradable restricts it to Overwrite and
// MergePatchJson, the policies an in-place upgrade re-applies.
func PatchAnnotations(annotations map[string]string, patches []appsv1alpha1.SidecarSetPatchPodMetadata, onlyUpgradable bool) (map[string]string, error) {
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	for i, p := range patches {
		switch p.PatchPolicy {
		case appsv1alpha1.SidecarSetRetainPatchPolicy, "":
			if onlyUpgradable {
				continue
			}
			for k, v := range p.Annotations {
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
		case appsv1alpha1.SidecarSetOverwritePatchPolicy:
			maps.Copy(out, p.Annotations)
		case appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy:
			for k, v := range p.Annotations {
				cur, ok := out[k]
				if !ok || cur == "" {
					out[k] = v
					continue
				}
				merged, err := jsonpatch.MergePatch([]byte(cur), []byte(v))
				if err != nil {
					return nil, fmt.Errorf("spec.patchPodMetadata[%d].annotations[%s]: merge into the pod's value: %w", i, k, err)
				}
				out[k] = string(merged)
			}
		default:
			return nil, fmt.Errorf("spec.patchPodMetadata[%d].patchPolicy: unknown policy %q", i, p.PatchPolicy)
		}
	}
	return out, nil
}
