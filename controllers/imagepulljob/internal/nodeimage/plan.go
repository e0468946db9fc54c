package nodeimage

import (
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// OpenKruise's names.
const (
	// FakeLabelKey marks a NodeImage kept without a Node (OpenKruise's test hook).
	FakeLabelKey = "apps.kruise.io/fake-nodeimage"
	// virtualKubeletLabel: nodes labelled type=virtual-kubelet get no NodeImage (nothing pulls there).
	virtualKubeletLabelKey   = "type"
	virtualKubeletLabelValue = "virtual-kubelet"
)

// lifecycle is what to do with a node's NodeImage object itself.
type lifecycle int

const (
	keep lifecycle = iota
	create
	remove
)

// planLifecycle decides, as OpenKruise does, whether the NodeImage of a node is created (the node has been Ready for
// delay), removed (the node is gone, unless the NodeImage is marked fake) or kept; wait > 0 asks for a requeue
// (the node's Ready time has not reached delay yet).
func planLifecycle(node *corev1.Node, ni *appsv1beta1.NodeImage, delay time.Duration, now time.Time) (lifecycle, time.Duration) {
	if node == nil || node.DeletionTimestamp != nil || isVirtual(node) {
		if ni != nil && ni.DeletionTimestamp == nil && !isFake(ni) {
			return remove, 0
		}
		return keep, 0
	}
	if ni != nil {
		return keep, 0
	}
	since, ready := readySince(node)
	if !ready {
		return keep, 0
	}
	if left := since.Add(delay).Sub(now); left > 0 {
		return keep, left
	}
	return create, 0
}

func isFake(ni *appsv1beta1.NodeImage) bool { _, ok := ni.Labels[FakeLabelKey]; return ok }

func isVirtual(node *corev1.Node) bool {
	return node.Labels[virtualKubeletLabelKey] == virtualKubeletLabelValue
}

// readySince returns when the node's Ready condition became True, and whether it is.
func readySince(node *corev1.Node) (time.Time, bool) {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastTransitionTime.Time, c.Status == corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}

// jobState says whether the ImagePullJob a tag's owner reference names still exists with that UID.
type jobState func(namespace, name string, uid types.UID) bool

// pruneSpec returns the NodeImage's spec cleaned as OpenKruise's nodeimage controller cleans it, with the node's
// labels, and whether anything changed (out is a copy; ni is never modified):
//   - a tag without createdAt is dropped;
//   - owner references to ImagePullJobs that are gone (or recreated: another UID) are dropped, and a tag whose
//     owners all went is dropped: this is how a job's tag leaves the NodeImages once the job is deleted;
//   - a tag whose pull finished (status at the tag's version with a completionTime) more than
//     pullPolicy.ttlSecondsAfterFinished ago is dropped; wait is the time until the next such expiry;
//   - an image without tags is dropped with its pull secrets.
//
// Owner references of other kinds are kept as they are.
func pruneSpec(ni *appsv1beta1.NodeImage, nodeLabels map[string]string, alive jobState, now time.Time) (out *appsv1beta1.NodeImage, changed bool, wait time.Duration, why []string) {
	out = ni.DeepCopy()
	if nodeLabels != nil && !maps.Equal(ni.Labels, nodeLabels) {
		out.Labels = maps.Clone(nodeLabels)
		changed = true
		why = append(why, "node labels changed")
	}
	images := make(map[string]appsv1beta1.ImageSpec, len(out.Spec.Images))
	for name, img := range out.Spec.Images {
		var tags []appsv1beta1.ImageTagSpec
		for _, t := range img.Tags {
			full := name + ":" + t.Tag
			if t.CreatedAt == nil {
				why = append(why, full+" has no createdAt")
				continue
			}
			var owners []corev1.ObjectReference
			for _, r := range t.OwnerReferences {
				if r.Kind != "ImagePullJob" || r.GroupVersionKind().Group != appsv1beta1.GroupName || alive(r.Namespace, r.Name, r.UID) {
					owners = append(owners, r)
				}
			}
			if len(owners) != len(t.OwnerReferences) {
				if len(owners) == 0 {
					why = append(why, full+": its jobs are gone")
					continue
				}
				why = append(why, full+": some of its jobs are gone")
				t.OwnerReferences = owners
			}
			if left, ok := ttlLeft(ni, name, &t, now); ok {
				if left <= 0 {
					why = append(why, fmt.Sprintf("%s finished more than %ds ago", full, *t.PullPolicy.TTLSecondsAfterFinished))
					continue
				}
				if wait == 0 || left < wait {
					wait = left
				}
			}
			tags = append(tags, t)
		}
		if len(tags) == 0 {
			why = append(why, name+" has no tags left")
			continue
		}
		img.Tags = tags
		images[name] = img
	}
	if len(why) > 0 && !(changed && len(why) == 1) {
		// Something in the spec itself was dropped or trimmed.
		out.Spec.Images = images
		changed = true
	}
	return out, changed, wait, why
}

// ttlLeft returns the time left before the tag's TTL after its pull finished, and false when no TTL runs (no TTL,
// or the pull of the tag's current version has not finished).
func ttlLeft(ni *appsv1beta1.NodeImage, name string, t *appsv1beta1.ImageTagSpec, now time.Time) (time.Duration, bool) {
	if t.PullPolicy == nil || t.PullPolicy.TTLSecondsAfterFinished == nil {
		return 0, false
	}
	for _, s := range ni.Status.ImageStatuses[name].Tags {
		if s.Tag == t.Tag && s.Version == t.Version && s.CompletionTime != nil {
			return s.CompletionTime.Add(time.Duration(*t.PullPolicy.TTLSecondsAfterFinished) * time.Second).Sub(now), true
		}
	}
	return 0, false
}
