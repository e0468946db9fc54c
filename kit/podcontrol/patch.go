package podcontrol

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// podPatchMeta is the strategic-merge schema of a pod (merge keys of
// containers, conditions, ...), computed once.
var podPatchMeta = func() strategicpatch.LookupPatchMeta {
	m, err := strategicpatch.NewPatchMetaFromStruct(&corev1.Pod{})
	if err != nil {
		panic(fmt.Sprintf("pod patch schema: %v", err))
	}
	return m
}()

// PodPatch returns the strategic-merge patch that turns pod into next (a
// modified copy of it), guarded by pod's resourceVersion, or nil when next
// changes nothing.
//
// Writing the difference instead of the whole object is what lets a cache
// hold slimmed pods (kit/controller.SlimPod): fields the cache dropped are absent from both
// sides, so the patch never touches them. The resourceVersion makes the
// patch fail with Conflict exactly where an update would, so decisions
// computed from the cached pod are never applied to a newer one.
func PodPatch(pod, next *corev1.Pod) ([]byte, error) {
	before, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encode pod %s: %w", pod.Name, err)
	}
	after, err := json.Marshal(next)
	if err != nil {
		return nil, fmt.Errorf("encode pod %s: %w", next.Name, err)
	}
	diff, err := strategicpatch.CreateTwoWayMergePatchUsingLookupPatchMeta(before, after, podPatchMeta)
	if err != nil {
		return nil, fmt.Errorf("diff pod %s: %w", pod.Name, err)
	}
	var patch map[string]any
	if err := json.Unmarshal(diff, &patch); err != nil {
		return nil, fmt.Errorf("decode patch of pod %s: %w", pod.Name, err)
	}
	if len(patch) == 0 {
		return nil, nil
	}
	if pod.ResourceVersion != "" {
		meta, _ := patch["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			patch["metadata"] = meta
		}
		meta["resourceVersion"] = pod.ResourceVersion
	}
	return json.Marshal(patch)
}
