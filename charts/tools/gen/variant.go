package gen

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// A Variant is a value of a feature's section that stands for a second overlay of that feature: with the value set
// to Example the chart renders what deploy/overlays/<Overlay> renders, with the value empty what
// deploy/overlays/<Feature> renders, and with another name that name where the variant overlay has Example. The
// generator derives the templates from the two overlays' difference, which may only be
//   - an object's metadata.namespace: the base overlay's namespace becomes Example (templated: the value, default
//     the base's), and
//   - args appended to a Deployment's container, each naming Example once (templated: present when the value is set);
//
// any other difference fails the generation, so the chart cannot silently drift from the variant overlay.
// TestChartMatchesOverlays compares the chart with the value set to Example against the variant overlay. Values of
// variants are namespace names: flotilla.validate fails the render on one that is not a DNS-1123 label.
type Variant struct {
	Feature, Value, Overlay, Example string
	// Description is the value's comment in values.yaml (and its row in README.md's table).
	Description string
}

// Variants of the features' overlays.
var Variants = []Variant{{
	Feature: "sidecarset", Value: "revisionNamespace", Overlay: "sidecarset-kruise-system", Example: "kruise-system",
	Description: "Namespace of the SidecarSet ControllerRevisions and the patchPodMetadata whitelist (ConfigMap " +
		"kruise-configuration) (--revision-namespace; \"\": flotilla-system, the controller's own). kruise-system when " +
		"taking over from OpenKruise, which left them there (controllers/sidecarset/README.md, \"Taking over from " +
		"OpenKruise\"): what deploy/overlays/sidecarset-kruise-system installs, the revisions Role and RoleBinding in " +
		"that namespace (which must exist) bound to the ServiceAccount in flotilla-system. A DNS-1123 label.",
}}

func variantsOf(feature string) []Variant {
	var out []Variant
	for _, v := range Variants {
		if v.Feature == feature {
			out = append(out, v)
		}
	}
	return out
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// variantEdit is what a variant changes in one object of the base overlay.
type variantEdit struct {
	v         Variant
	namespace string   // the base's namespace, which the variant replaces by Example ("": unchanged)
	args      []string // args the variant appends to the Deployment's container
}

// variantEdits compares the base overlay's objects with the variant overlay's and returns, per index into base, the
// edits; a difference the chart cannot express as the value is an error.
func variantEdits(v Variant, base, variant []map[string]any) (map[int][]variantEdit, error) {
	if !dnsLabel.MatchString(v.Example) || len(v.Example) > 63 {
		return nil, fmt.Errorf("variant %s.%s: example %q is not a DNS-1123 label", v.Feature, v.Value, v.Example)
	}
	id := func(o map[string]any) string {
		md, _ := o["metadata"].(map[string]any)
		return fmt.Sprintf("%v %v", o["kind"], md["name"])
	}
	byID := map[string]map[string]any{}
	for _, o := range variant {
		byID[id(o)] = o
	}
	if len(byID) != len(variant) || len(variant) != len(base) {
		return nil, fmt.Errorf("deploy/overlays/%s: %d objects, deploy/overlays/%s %d: a variant may only change objects",
			v.Overlay, len(variant), v.Feature, len(base))
	}
	edits := map[int][]variantEdit{}
	for i, b := range base {
		w, ok := byID[id(b)]
		if !ok {
			return nil, fmt.Errorf("deploy/overlays/%s has no %s", v.Overlay, id(b))
		}
		w = deepCopy(w).(map[string]any)
		e := variantEdit{v: v}
		bmd, wmd := getMap(b, "metadata"), getMap(w, "metadata")
		if bns, _ := bmd["namespace"].(string); wmd["namespace"] != bmd["namespace"] {
			if wmd["namespace"] != v.Example || bns == "" {
				return nil, fmt.Errorf("deploy/overlays/%s: %s moves from namespace %q to %v; a variant may only move objects to %q",
					v.Overlay, id(b), bns, wmd["namespace"], v.Example)
			}
			e.namespace = bns
			wmd["namespace"] = bns
		}
		if b["kind"] == "Deployment" {
			bc, err := container(b)
			if err != nil {
				return nil, err
			}
			wc, err := container(w)
			if err != nil {
				return nil, err
			}
			bargs, _ := bc["args"].([]any)
			wargs, _ := wc["args"].([]any)
			if len(wargs) > len(bargs) && reflect.DeepEqual(bargs, wargs[:len(bargs)]) {
				for _, a := range wargs[len(bargs):] {
					s, _ := a.(string)
					if strings.Count(s, v.Example) != 1 {
						return nil, fmt.Errorf("deploy/overlays/%s: %s: added arg %q does not name %q once", v.Overlay, id(b), a, v.Example)
					}
					e.args = append(e.args, s)
				}
				wc["args"] = bargs
			}
		}
		if !reflect.DeepEqual(b, w) {
			return nil, fmt.Errorf("deploy/overlays/%s: %s differs from deploy/overlays/%s beyond its namespace and appended args; the chart cannot express that as %s.%s",
				v.Overlay, id(b), v.Feature, v.Feature, v.Value)
		}
		if e.namespace != "" || e.args != nil {
			edits[i] = append(edits[i], e)
		}
	}
	if len(edits) == 0 {
		return nil, fmt.Errorf("deploy/overlays/%s renders what deploy/overlays/%s does: %s.%s would change nothing", v.Overlay, v.Feature, v.Feature, v.Value)
	}
	return edits, nil
}

// apply puts the edit's template expressions into the (already templated) object of d.
func (e variantEdit) apply(d *doc) error {
	value := fmt.Sprintf("$.Values.%s.%s", e.v.Feature, e.v.Value)
	if e.namespace != "" {
		getMap(d.obj, "metadata")["namespace"] = d.Inline(fmt.Sprintf("{{ %s | default %q }}", value, e.namespace))
	}
	if e.args == nil {
		return nil
	}
	c, err := container(d.obj)
	if err != nil {
		return err
	}
	// Before the last item, the token of the values' args (flotilla.args): where the variant overlay appends them.
	args, _ := c["args"].([]any)
	if len(args) == 0 {
		return fmt.Errorf("%s: no args", describe(d.obj))
	}
	var added []any
	for _, a := range e.args {
		format := strings.Replace(strings.ReplaceAll(a, "%", "%%"), e.v.Example, "%s", 1)
		added = append(added, d.Line(func(indent int) string {
			return fmt.Sprintf("{{- with %s }}\n%s- {{ printf %q . | quote }}\n{{- end }}\n", value, pad(indent), format)
		}))
	}
	last := args[len(args)-1]
	c["args"] = append(append(args[:len(args)-1:len(args)-1], added...), last)
	return nil
}

func deepCopy(x any) any {
	switch t := x.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, v := range t {
			out[k] = deepCopy(v)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			out[i] = deepCopy(v)
		}
		return out
	default:
		return x
	}
}

// variantsTpl defines flotilla.variantValues: the dotted names of the variants' values (flotilla.validate checks them).
func variantsTpl() string {
	var b strings.Builder
	b.WriteString("{{- /* Values standing for a variant overlay (gen.Variants): namespace names, checked to be DNS-1123 labels. */ -}}\n")
	b.WriteString("{{- define \"flotilla.variantValues\" -}}\n")
	for _, v := range Variants {
		fmt.Fprintf(&b, "- %s.%s\n", v.Feature, v.Value)
	}
	b.WriteString("{{- end -}}\n")
	return b.String()
}
