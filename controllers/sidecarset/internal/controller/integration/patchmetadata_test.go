package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
)

// Item 2 (v1.3 §4): patchPodMetadata's Overwrite and MergePatchJson entries
// are re-applied with an in-place sidecar upgrade, Retain ones are not — for
// SidecarSets the whitelist (ConfigMap kruise-configuration in the
// controller's namespace, key SidecarSet_PatchPodMetadata_WhiteList) allows;
// a SidecarSet no rule selects is upgraded without touching annotations.
func TestPatchPodMetadataInUpgrade(t *testing.T) {
	h := newHarness(t)
	_, err := h.Env.Kube.CoreV1().ConfigMaps(h.NS).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: sidecarcontrol.ConfigMapName},
		Data: map[string]string{sidecarcontrol.WhitelistKey: `{"rules":[{"selector":{"matchLabels":{"team":"mesh"}},` +
			`"allowedAnnotationKeyExprs":["^oom-score$","^apps\\.kruise\\.io/container-launch-priority$","^retained$"]}]}`},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	h.startController()

	patches := func(launch, oom, retained string) []appsv1alpha1.SidecarSetPatchPodMetadata {
		return []appsv1alpha1.SidecarSetPatchPodMetadata{
			{PatchPolicy: appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"oom-score": oom}},
			{PatchPolicy: appsv1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"apps.kruise.io/container-launch-priority": launch}},
			{PatchPolicy: appsv1alpha1.SidecarSetRetainPatchPolicy, Annotations: map[string]string{"retained": retained}},
		}
	}
	for _, name := range []string{"allowed", "other"} {
		team := map[string]string{"allowed": "mesh", "other": "web"}[name]
		h.createSet(h.newSet(name, sideV1, func(s *appsv1alpha1.SidecarSet) {
			s.Labels["team"] = team
			s.Spec.PatchPodMetadata = patches("Ordered", `{"log-agent": 1}`, "v1")
		}))
		// Both pods start patched (as a webhook with the gate on would inject).
		set := h.sets.Get(h.setName(name))
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Namespace: h.NS, Labels: map[string]string{"app": name},
				Annotations: map[string]string{"oom-score": `{"main": 2}`}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.local/app:v1"}}},
		}
		injected, _, err := sidecarcontrol.Inject(pod, []*appsv1alpha1.SidecarSet{set}, sidecarcontrol.RevisionList{}, sidecarcontrol.Options{PatchMetadataDefaultsAllowed: true})
		require.NoError(t, err)
		_, err = h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), injected, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, name := range []string{"allowed", "other"} {
		p := h.waitPods(name, "ready", allReady(1))[0]
		assert.Equal(t, `{"log-agent":1,"main":2}`, p.Annotations["oom-score"])
		h.sets.Modify(h.setName(name), func(s *appsv1alpha1.SidecarSet) {
			setImage("side", sideV2)(s)
			s.Spec.PatchPodMetadata = patches("Changed", `{"log-agent": 5}`, "v2")
		})
	}
	allowed := h.waitPods("allowed", "upgraded", allOn(1, "side", sideV2))[0]
	assert.Equal(t, "Changed", allowed.Annotations["apps.kruise.io/container-launch-priority"], "Overwrite re-applied")
	assert.Equal(t, `{"log-agent":5,"main":2}`, allowed.Annotations["oom-score"], "MergePatchJson re-applied")
	assert.Equal(t, "v1", allowed.Annotations["retained"], "Retain not re-applied")

	other := h.waitPods("other", "upgraded", allOn(1, "side", sideV2))[0]
	assert.Equal(t, "Ordered", other.Annotations["apps.kruise.io/container-launch-priority"], "not whitelisted: untouched")
	assert.Equal(t, `{"log-agent":1,"main":2}`, other.Annotations["oom-score"])
}
