package conversion

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Group is the API group whose versions this package converts.
const Group = "apps.kruise.io"

// The two served versions.
const (
	V1alpha1 = "v1alpha1"
	V1beta1  = "v1beta1"
)

// StashAnnotationPrefix is the prefix of the annotations this package owns;
// StashAnnotation(v) is the one holding the fields of version v that the
// object's own version cannot express.
const StashAnnotationPrefix = "conversion.flotilla.dev/"

// StashAnnotation is the annotation that carries, on an object of the other
// version, the fields of version that it cannot express.
func StashAnnotation(version string) string { return StashAnnotationPrefix + version + "-fields" }

// kinds maps every kind served at both versions to its mapping rules; a kind
// with no rules has identical schemas in both versions.
var kinds = map[string][]rule{
	"DaemonSet":       daemonSetRules,
	"SidecarSet":      sidecarSetRules,
	"AdvancedCronJob": nil,
	"BroadcastJob":    nil,
	"ImagePullJob":    nil,
	"NodeImage":       nil,
	"StatefulSet":     nil,
}

// Kinds lists the kinds served at both v1alpha1 and v1beta1, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// NeedsWebhook says whether kind's CRD needs conversion strategy Webhook
// (its versions differ) rather than None (identical schemas: the API server
// only rewrites apiVersion).
func NeedsWebhook(kind string) bool { return len(kinds[kind]) > 0 }

// Convert converts obj in place to toVersion ("v1beta1" or
// "apps.kruise.io/v1beta1") and sets its apiVersion. See the package
// documentation for the mappings and why they are lossless.
func Convert(obj *unstructured.Unstructured, toVersion string) (err error) {
	// A value that is not JSON (only possible for an object built in code)
	// makes the deep copies panic; a webhook must answer with an error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("object holds a value that is not JSON: %v", r)
		}
	}()
	if obj == nil || obj.Object == nil {
		return fmt.Errorf("no object to convert")
	}
	to, err := parseTarget(toVersion)
	if err != nil {
		return err
	}
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return fmt.Errorf("apiVersion %q: %w", obj.GetAPIVersion(), err)
	}
	kind := obj.GetKind()
	if gv.Group != Group || (gv.Version != V1alpha1 && gv.Version != V1beta1) {
		return fmt.Errorf("apiVersion %q: only %s/%s and %s/%s are converted", obj.GetAPIVersion(), Group, V1alpha1, Group, V1beta1)
	}
	rules, ok := kinds[kind]
	if !ok {
		return fmt.Errorf("kind %q: not served at both %s and %s", kind, V1alpha1, V1beta1)
	}
	if gv.Version == to {
		return nil
	}
	out, err := convert(obj.Object, rules, gv.Version, to)
	if err != nil {
		return fmt.Errorf("%s %s from %s to %s: %w", kind, obj.GetName(), gv.Version, to, err)
	}
	obj.Object = out
	obj.SetAPIVersion(Group + "/" + to)
	return nil
}

func parseTarget(v string) (string, error) {
	version := v
	if g, ver, ok := strings.Cut(v, "/"); ok {
		if g != Group {
			return "", fmt.Errorf("target apiVersion %q: only group %s is converted", v, Group)
		}
		version = ver
	}
	if version != V1alpha1 && version != V1beta1 {
		return "", fmt.Errorf("target version %q: want %s or %s", v, V1alpha1, V1beta1)
	}
	return version, nil
}

// rule is one mapping between fields of the two versions. alpha and beta are
// the fields (paths) it reads and writes in each version; toBeta and toAlpha
// convert in place, touching only those fields. Rules of one kind never share
// a field, so each can be reversed on its own.
type rule struct {
	name          string
	alpha, beta   []path
	toBeta, toAlp func(obj map[string]interface{}) error
}

func (r rule) fields(version string) []path {
	if version == V1alpha1 {
		return r.alpha
	}
	return r.beta
}

func (r rule) forward(to string) func(map[string]interface{}) error {
	if to == V1beta1 {
		return r.toBeta
	}
	return r.toAlp
}

// stashEntry is what one rule carries across a conversion: the source's
// values of the rule's fields (Restore) and the values the conversion wrote
// into the converted object (When), keyed by JSON pointer; a field missing
// from a map was absent.
type stashEntry struct {
	Restore map[string]interface{} `json:"restore,omitempty"`
	When    map[string]interface{} `json:"when,omitempty"`
}

func convert(in map[string]interface{}, rules []rule, from, to string) (map[string]interface{}, error) {
	work := runtime.DeepCopyJSON(in)
	// Annotations under the owned prefix: the stash for `to` is consumed; any
	// other is stale (or written by a client) and replaced below.
	consumed := map[string]stashEntry{}
	if raw, ok, err := popAnnotation(work, StashAnnotation(to)); err != nil {
		return nil, err
	} else if ok {
		// An unreadable stash is stale by definition: the conversion must
		// not fail because of bookkeeping, so it is dropped.
		if err := utiljson.Unmarshal([]byte(raw), &consumed); err != nil {
			consumed = map[string]stashEntry{}
		}
	}
	if _, _, err := popAnnotation(work, StashAnnotation(from)); err != nil {
		return nil, err
	}
	src := runtime.DeepCopyJSON(work)

	for _, r := range rules {
		if err := r.forward(to)(work); err != nil {
			return nil, err
		}
	}
	for _, r := range rules {
		e, ok := consumed[r.name]
		if !ok {
			continue
		}
		matches, err := holds(src, r.fields(from), e.When)
		if err != nil {
			return nil, err
		}
		if matches {
			if err := assign(work, r.fields(to), e.Restore); err != nil {
				return nil, err
			}
		}
	}
	stash := map[string]stashEntry{}
	for _, r := range rules {
		back := runtime.DeepCopyJSON(work)
		if err := r.forward(from)(back); err != nil {
			return nil, err
		}
		want, err := values(src, r.fields(from))
		if err != nil {
			return nil, err
		}
		same, err := holds(back, r.fields(from), want)
		if err != nil {
			return nil, err
		}
		if same {
			continue
		}
		wrote, err := values(work, r.fields(to))
		if err != nil {
			return nil, err
		}
		stash[r.name] = stashEntry{Restore: want, When: wrote}
	}
	if len(stash) > 0 {
		b, err := json.Marshal(stash)
		if err != nil {
			return nil, fmt.Errorf("encoding annotation %s: %w", StashAnnotation(from), err)
		}
		if err := setPath(work, annotationPath(StashAnnotation(from)), string(b)); err != nil {
			return nil, err
		}
	}
	return work, nil
}

// values reads fields of obj into a map keyed by JSON pointer (absent fields
// are left out).
func values(obj map[string]interface{}, fields []path) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	for _, p := range fields {
		v, ok, err := getPath(obj, p)
		if err != nil {
			return nil, err
		}
		if ok {
			out[p.pointer()] = v
		}
	}
	return out, nil
}

// holds says whether obj's fields have exactly the values of want (a field
// missing from want must be absent).
func holds(obj map[string]interface{}, fields []path, want map[string]interface{}) (bool, error) {
	for _, p := range fields {
		v, ok, err := getPath(obj, p)
		if err != nil {
			return false, err
		}
		w, wok := want[p.pointer()]
		if ok != wok || (ok && !jsonEqual(v, w)) {
			return false, nil
		}
	}
	return true, nil
}

// assign sets obj's fields to the values of vals, removing those vals lacks.
func assign(obj map[string]interface{}, fields []path, vals map[string]interface{}) error {
	for _, p := range fields {
		if v, ok := vals[p.pointer()]; ok {
			if err := setPath(obj, p, runtime.DeepCopyJSONValue(normalize(v))); err != nil {
				return err
			}
		} else if err := deletePath(obj, p); err != nil {
			return err
		}
	}
	return nil
}

// jsonEqual compares two JSON values by their encoding, so that int64 and
// float64 forms of the same number are equal (map keys are encoded sorted).
func jsonEqual(a, b interface{}) bool {
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ab) == string(bb)
}

// normalize turns a value decoded from the stash into the form unstructured
// objects use (integral numbers as int64).
func normalize(v interface{}) interface{} {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out interface{}
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}
