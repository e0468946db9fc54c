// Command crdpatch merges hand-written schema fragments into the CRDs that
// controller-gen generated. hack/update-codegen.sh runs it between
// controller-gen and copying the CRDs into deploy/base/crds.
//
// It exists for what markers cannot say. A pod template field is generated
// schemaless (type: object, x-kubernetes-preserve-unknown-fields: true) so
// that the CRD stays small and never prunes pod fields; but CEL rules can only
// read fields the schema declares. A patch declares the few template
// fields a rule needs (e.g. metadata.labels, spec.restartPolicy) on top of
// the schemaless object, which keeps preserving everything else.
//
// Usage:
//
//	crdpatch -crds <dir of controller-gen output> -patches <dir>
//
// Every <crd name>.yaml in the patch directory (for example
// clonesets.apps.kruise.io.yaml) has the form
//
//	schemas:
//	- path: /properties/spec/properties/template   # JSON pointer below openAPIV3Schema
//	  merge:                                        # deep-merged into the schema there
//	    properties: {...}
//
// and is applied to every version of that CRD. A top-level
//
//	conversion: {strategy: Webhook, webhook: {...}}
//
// becomes the CRD's spec.conversion. Maps are merged key by key
// (the patch wins on conflicting scalars); lists are replaced. The pointer
// must exist in the generated schema. CRD files are rewritten in
// controller-gen's own format ("---" and sigs.k8s.io/yaml with sorted keys),
// so the output is deterministic and an empty patch changes nothing.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// File is one patch file.
type File struct {
	Schemas []SchemaPatch `json:"schemas"`
	// Conversion, when set, is the CRD's spec.conversion (controller-gen
	// writes none: strategy None). A kind whose versions differ names the
	// conversion webhook of the controller serving it (kit/webhook
	// ServeConversion), which keeps the caBundle.
	Conversion map[string]any `json:"conversion,omitempty"`
}

// SchemaPatch merges Merge into the schema found at Path.
type SchemaPatch struct {
	Path  string         `json:"path"`
	Merge map[string]any `json:"merge"`
}

func main() {
	crds := flag.String("crds", "", "directory of generated CRD YAML files (rewritten in place)")
	patches := flag.String("patches", "", "directory of <crd name>.yaml patch files")
	flag.Parse()
	if *crds == "" || *patches == "" {
		fmt.Fprintln(os.Stderr, "usage: crdpatch -crds <dir> -patches <dir>")
		os.Exit(2)
	}
	if err := run(*crds, *patches); err != nil {
		fmt.Fprintln(os.Stderr, "crdpatch:", err)
		os.Exit(1)
	}
}

func run(crdDir, patchDir string) error {
	patches, err := filepath.Glob(filepath.Join(patchDir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(patches)
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		return err
	}
	byName := map[string]string{}
	for _, f := range files {
		obj, err := readYAML(f)
		if err != nil {
			return err
		}
		if name, _ := lookup(obj, "metadata", "name").(string); name != "" {
			byName[name] = f
		}
	}
	for _, o := range patches {
		name := strings.TrimSuffix(filepath.Base(o), ".yaml")
		target, ok := byName[name]
		if !ok {
			return fmt.Errorf("%s: no generated CRD named %s", o, name)
		}
		if err := apply(target, o); err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
	}
	return nil
}

// apply merges the patch file into the CRD file.
func apply(crdFile, patchFile string) error {
	b, err := os.ReadFile(patchFile)
	if err != nil {
		return err
	}
	var pf File
	if err := yaml.UnmarshalStrict(b, &pf); err != nil {
		return err
	}
	crd, err := readYAML(crdFile)
	if err != nil {
		return err
	}
	versions, _ := lookup(crd, "spec", "versions").([]any)
	if len(versions) == 0 {
		return errors.New("CRD has no versions")
	}
	for _, v := range versions {
		schema, _ := lookup(v, "schema", "openAPIV3Schema").(map[string]any)
		if schema == nil {
			return errors.New("a version has no schema")
		}
		for _, p := range pf.Schemas {
			at, err := pointer(schema, p.Path)
			if err != nil {
				return err
			}
			// JSON round trip: patch numbers become json.Number like the CRD's.
			m, err := normalize(p.Merge)
			if err != nil {
				return err
			}
			merge(at, m)
		}
	}
	if pf.Conversion != nil {
		conv, err := normalize(pf.Conversion)
		if err != nil {
			return err
		}
		spec, _ := lookup(crd, "spec").(map[string]any)
		if spec == nil {
			return errors.New("CRD has no spec")
		}
		spec["conversion"] = conv
	}
	return writeYAML(crdFile, crd)
}

// merge deep-merges src into dst: maps key by key, everything else replaced.
func merge(dst, src map[string]any) {
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
}

// pointer resolves a JSON pointer (RFC 6901) to a map inside obj.
func pointer(obj map[string]any, ptr string) (map[string]any, error) {
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("path %q is not a JSON pointer", ptr)
	}
	cur := obj
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		next, ok := cur[tok].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("path %q: %q is not an object in the generated schema", ptr, tok)
		}
		cur = next
	}
	return cur, nil
}

func lookup(obj any, keys ...string) any {
	for _, k := range keys {
		m, ok := obj.(map[string]any)
		if !ok {
			return nil
		}
		obj = m[k]
	}
	return obj
}

func normalize(v map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}

func decodeJSON(b []byte) (map[string]any, error) {
	var out map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// readYAML reads a one-document YAML file the way controller-gen built it:
// JSON numbers kept exact.
func readYAML(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(bytes.TrimPrefix(b, []byte("---\n")))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return decodeJSON(j)
}

// writeYAML writes obj as controller-gen does (genall.WriteYAML).
func writeYAML(path string, obj map[string]any) error {
	y, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), y...), 0o644)
}
