package lab

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Shipped decodes into out the object of kind and name (any name when
// empty) from deploy/components/<component>/<file> of the repository at
// root — e.g. the webhook configuration a harness installs as shipped,
// pointed at its own server. It fails the test when the file lacks it.
func Shipped(t testing.TB, root, component, file, kind, name string, out any) {
	t.Helper()
	path := filepath.Join(root, "deploy", "components", component, file)
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		raw := map[string]any{}
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			t.Fatalf("lab: no %s %s in %s", kind, name, path)
		}
		if err != nil {
			t.Fatalf("lab: decode %s: %v", path, err)
		}
		md, _ := raw["metadata"].(map[string]any)
		if raw["kind"] != kind || (name != "" && md["name"] != name) {
			continue
		}
		b, err := json.Marshal(raw)
		if err == nil {
			err = json.Unmarshal(b, out)
		}
		if err != nil {
			t.Fatalf("lab: %s %s in %s: %v", kind, name, path, err)
		}
		return
	}
}
