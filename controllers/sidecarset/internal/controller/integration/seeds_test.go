package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
)

// The seeds' SidecarSet YAML, as the release blogs print it; `...` (elided
// by the blogs) is filled with a selector and, where the example has none,
// a container. The v1.3 §4 example is mis-indented in the blog (patchPolicy
// outside its list items); it is used with the indentation repaired.
var seedYAML = map[string]string{
	"v0.9-hot-upgrade": `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
spec:
  # ...
  containers:
  - name: nginx-sidecar
    image: nginx:1.18
    lifecycle:
      postStart:
        exec:
          command:
          - /bin/bash
          - -c
          - /usr/local/bin/nginx-agent migrate
    upgradeStrategy:
      upgradeType: HotUpgrade
      hotUpgradeEmptyImage: empty:1.0.0
`,
	"v1.3-revision-name": `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: sidecarset
spec:
  # ...
  injectionStrategy:
    revision:
      revisionName: specific-controllerRevision-name
`,
	"v1.3-custom-version": `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: sidecarset
  labels:
    apps.kruise.io/sidecarset-custom-version: version-2
spec:
  # ...
  updateStrategy:
    partition: 90%
  injectionStrategy:
    revision:
      customVersion: version-1
`,
	"v1.3-patch-pod-metadata": `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
spec:
  containers:
  # ...
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

// The seeds' YAML is accepted by the API server (schema, CEL) and means what
// the blogs say.
func TestSeedYAML(t *testing.T) {
	h := newHarness(t)
	for name, doc := range seedYAML {
		var s appsv1alpha1.SidecarSet
		require.NoError(t, yaml.Unmarshal([]byte(doc), &s), name)
		s.Name = h.setName(strings.ReplaceAll(strings.ReplaceAll(name, ".", ""), "_", "-"))
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[testLabel] = h.NS
		s.Spec.Namespace = h.NS
		s.Spec.Selector = h.newSet(name, sideV1).Spec.Selector
		if len(s.Spec.Containers) == 0 {
			s.Spec.Containers = h.newSet(name, sideV1).Spec.Containers
		}
		got := h.createSet(&s)
		switch name {
		case "v0.9-hot-upgrade":
			c := got.Spec.Containers[0]
			assert.Equal(t, appsv1alpha1.SidecarContainerHotUpgrade, c.UpgradeStrategy.UpgradeType)
			assert.Equal(t, "empty:1.0.0", c.UpgradeStrategy.HotUpgradeEmptyImage)
			assert.NotNil(t, c.Lifecycle.PostStart.Exec)
		case "v1.3-revision-name":
			assert.Equal(t, "specific-controllerRevision-name", *got.Spec.InjectionStrategy.Revision.RevisionName)
			assert.Equal(t, appsv1alpha1.AlwaysSidecarSetInjectRevisionPolicy, got.Spec.InjectionStrategy.Revision.Policy, "policy defaults to Always")
		case "v1.3-custom-version":
			assert.Equal(t, "version-2", got.Labels[sidecarcontrol.CustomVersionLabel])
			assert.Equal(t, intstr.FromString("90%"), *got.Spec.UpdateStrategy.Partition)
			assert.Equal(t, "version-1", *got.Spec.InjectionStrategy.Revision.CustomVersion)
		case "v1.3-patch-pod-metadata":
			require.Len(t, got.Spec.PatchPodMetadata, 2)
			assert.Equal(t, appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, got.Spec.PatchPodMetadata[0].PatchPolicy)
			assert.Equal(t, `{"log-agent": 1}`, got.Spec.PatchPodMetadata[0].Annotations["oom-score"])
			assert.Equal(t, appsv1alpha1.SidecarSetOverwritePatchPolicy, got.Spec.PatchPodMetadata[1].PatchPolicy)
		default:
			t.Fatal(fmt.Sprintf("no check for %s", name))
		}
	}
}
