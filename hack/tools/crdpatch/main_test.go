package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const crd = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              replicas:
                format: int32
                type: integer
              template:
                type: object
                x-kubernetes-preserve-unknown-fields: true
            type: object
        type: object
`

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEmptyPatchKeepsTheFileByteForByte(t *testing.T) {
	crds, patches := t.TempDir(), t.TempDir()
	f := write(t, crds, "example.com_things.yaml", crd)
	write(t, patches, "things.example.com.yaml", "schemas: []\n")
	if err := run(crds, patches); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(f)
	if string(got) != crd {
		t.Fatalf("round trip changed the file:\n%s", got)
	}
}

func TestPatchMergesIntoTheSchema(t *testing.T) {
	crds, patches := t.TempDir(), t.TempDir()
	f := write(t, crds, "example.com_things.yaml", crd)
	write(t, patches, "things.example.com.yaml", `schemas:
- path: /properties/spec/properties/template
  merge:
    required: [spec]
    properties:
      spec:
        type: object
        properties:
          restartPolicy: {type: string, maxLength: 10}
`)
	if err := run(crds, patches); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(f)
	want := `              template:
                properties:
                  spec:
                    properties:
                      restartPolicy:
                        maxLength: 10
                        type: string
                    type: object
                required:
                - spec
                type: object
                x-kubernetes-preserve-unknown-fields: true
`
	if !strings.Contains(string(got), want) {
		t.Fatalf("merged schema missing; got:\n%s", got)
	}
	if !strings.HasPrefix(string(got), "---\napiVersion:") || !strings.Contains(string(got), "format: int32") {
		t.Fatalf("the rest of the CRD changed:\n%s", got)
	}
}

func TestPatchErrors(t *testing.T) {
	for name, patch := range map[string]string{
		"missing path":  "schemas:\n- path: /properties/spec/properties/nope\n  merge: {type: object}\n",
		"not a pointer": "schemas:\n- path: properties/spec\n  merge: {type: object}\n",
		"unknown field": "schema: []\n",
	} {
		t.Run(name, func(t *testing.T) {
			crds, patches := t.TempDir(), t.TempDir()
			write(t, crds, "example.com_things.yaml", crd)
			write(t, patches, "things.example.com.yaml", patch)
			if err := run(crds, patches); err == nil {
				t.Fatal("expected an error")
			}
		})
	}
	t.Run("no such CRD", func(t *testing.T) {
		crds, patches := t.TempDir(), t.TempDir()
		write(t, crds, "example.com_things.yaml", crd)
		write(t, patches, "others.example.com.yaml", "schemas: []\n")
		if err := run(crds, patches); err == nil {
			t.Fatal("expected an error")
		}
	})
}

// A conversion stanza becomes the CRD's spec.conversion.
func TestPatchSetsTheConversion(t *testing.T) {
	crds, patches := t.TempDir(), t.TempDir()
	f := write(t, crds, "example.com_things.yaml", crd)
	write(t, patches, "things.example.com.yaml", `conversion:
  strategy: Webhook
  webhook:
    conversionReviewVersions: [v1]
    clientConfig:
      service: {namespace: flotilla-system, name: things-controller-webhook, path: /convert, port: 19445}
`)
	if err := run(crds, patches); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(f)
	want := `  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service:
          name: things-controller-webhook
          namespace: flotilla-system
          path: /convert
          port: 19445
      conversionReviewVersions:
      - v1
`
	if !strings.Contains(string(got), want) {
		t.Fatalf("conversion missing; got:\n%s", got)
	}
}
