package seeds

// Skipped lists every seed example that is out of scope, by ID, with the
// reason. Every other example must be of a kind this API serves; tests fail
// on an unclassified example (for instance after a seed document changed).
var Skipped = map[string]string{
	"000#2": "core/v1 Pod showing probe results; not a kind of this API",
	"000#5": "not valid YAML: documentation pseudo-syntax (patchPolicy outside its list item, `Overwrite | Retain`); a repaired copy is tested as 000#5-repaired",
	"000#6": "core/v1 Pod showing injected annotations; not a kind of this API",
	"003#1": "ContainerRecreateRequest is out of scope for Flotilla",
	"003#2": "fragment of a ContainerRecreateRequest spec without apiVersion/kind",
	"003#4": "core/v1 Pod showing a revision label; not a kind of this API",
	"004#1": "PersistentPodState is out of scope for Flotilla",
	"004#4": "Go snippet (Lifecycle types), not a manifest",
	"004#5": "CRD subresources snippet, not an object",
	"004#6": "Go snippet (kubebuilder scale marker), not a manifest",
}

// Repaired holds hand-fixed copies of seed examples that are not valid
// YAML as written, so that the intent of the example is still covered.
var Repaired = map[string]string{
	"000#5-repaired": `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
spec:
  patchPodMetadata:
  - annotations:
      oom-score: '{"log-agent": 1}'
      custom.example.com/sidecar-configuration: '{"command": "/home/admin/bin/start.sh", "log-level": "3"}'
    patchPolicy: MergePatchJson
  - annotations:
      apps.kruise.io/container-launch-priority: Ordered
    patchPolicy: Overwrite
`,
}

// InScope returns the examples that must be accepted, with the repaired
// copies appended (as examples with Object set), and fails on examples that
// are neither in scope nor listed in Skipped.
func InScope(all []Example) ([]Example, error) {
	var out []Example
	for _, e := range all {
		if _, ok := Skipped[e.ID()]; ok {
			continue
		}
		if e.ParseError != nil {
			return nil, fmtErr("%s (%s:%d) does not parse and has no skip reason: %v", e.ID(), e.File, e.Line, e.ParseError)
		}
		if g := e.Group(); g != "apps.kruise.io" && g != "policy.kruise.io" {
			return nil, fmtErr("%s (%s:%d) %s %s is unclassified: add a skip reason", e.ID(), e.File, e.Line, e.APIVersion, e.Kind)
		}
		out = append(out, e)
	}
	for _, id := range sortedKeys(Repaired) {
		e := Example{File: id, Index: 0, Lang: "yaml", Raw: Repaired[id], Cleaned: Repaired[id]}
		finish(&e)
		if e.ParseError != nil {
			return nil, e.ParseError
		}
		e.File = id
		out = append(out, e)
	}
	return out, nil
}
