package controller

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// instanceIDLength is the length of the random part of pod names.
const instanceIDLength = 5

// newPod builds the pod of instance id from rev's template:
//   - name <cloneset>-<id>, labels: template labels, instance id,
//     controller-revision-hash (revision name, or hash with shortHash),
//     pod-template-hash, lifecycle state PreparingNormal;
//   - the controllerRef to the CloneSet;
//   - readiness gates InPlaceUpdateReady and KruisePodReady, on every pod as
//     OpenKruise puts them, so that a markPodNotReady hook added later
//     works on pods that exist already (the controller owns both
//     conditions and writes them in the pod's one first status write);
//   - one volume per volumeClaimTemplate, bound to the instance's PVC.
func newPod(cs *appsv1alpha1.CloneSet, rev *appsv1.ControllerRevision, tmpl *corev1.PodTemplateSpec, id string, shortHash bool) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: *tmpl.ObjectMeta.DeepCopy(),
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	pod.Name = cs.Name + "-" + id
	pod.Namespace = cs.Namespace
	pod.GenerateName = ""
	pod.OwnerReferences = []metav1.OwnerReference{controllerRef(cs)}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	hash := revision.ShortHash(rev.Name)
	pod.Labels[pub.CloneSetInstanceID] = id
	pod.Labels[pub.ControllerRevisionHashLabelKey] = rev.Name
	if shortHash {
		pod.Labels[pub.ControllerRevisionHashLabelKey] = hash
	}
	pod.Labels[pub.PodTemplateHashLabelKey] = hash
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingNormal)

	podutil.AddReadinessGate(pod, pub.InPlaceUpdateReady)
	podutil.AddReadinessGate(pod, pub.KruisePodReadyConditionType)
	for _, vct := range cs.Spec.VolumeClaimTemplates {
		podutil.SetClaimVolume(pod, vct.Name, pvcName(vct.Name, cs.Name, id))
	}
	return pod
}

// pvcName is the PVC of one volumeClaimTemplate for one instance.
func pvcName(vct, cloneSet, id string) string { return fmt.Sprintf("%s-%s-%s", vct, cloneSet, id) }

// newPVCs returns the PVCs instance id needs that do not exist yet: one per
// volumeClaimTemplate, labelled with the selector's matchLabels and the
// instance id, controlled by the CloneSet.
func newPVCs(cs *appsv1alpha1.CloneSet, id string, existing sets.Set[string]) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, vct := range cs.Spec.VolumeClaimTemplates {
		name := pvcName(vct.Name, cs.Name, id)
		if existing.Has(name) {
			continue
		}
		pvc := vct.DeepCopy()
		pvc.ObjectMeta = metav1.ObjectMeta{
			Name:            name,
			Namespace:       cs.Namespace,
			Labels:          maps.Clone(vct.Labels),
			Annotations:     maps.Clone(vct.Annotations),
			OwnerReferences: []metav1.OwnerReference{controllerRef(cs)},
		}
		if pvc.Labels == nil {
			pvc.Labels = map[string]string{}
		}
		if cs.Spec.Selector != nil {
			maps.Copy(pvc.Labels, cs.Spec.Selector.MatchLabels)
		}
		pvc.Labels[pub.CloneSetInstanceID] = id
		pvc.Status = corev1.PersistentVolumeClaimStatus{}
		out = append(out, pvc)
	}
	return out
}

// availableIDs returns up to n instance ids for new pods, given every pod of
// the CloneSet (terminating ones included) and its PVCs. With reuse, ids of
// PVCs whose pod is gone come first, so a recreated instance gets its
// volumes back; an id whose pod is still terminating cannot be used yet (the
// pod name is taken), so that creation waits for a later sync instead of
// giving the instance fresh volumes. The rest are fresh random ids used by
// no pod or PVC.
func availableIDs(n int, pods []*corev1.Pod, pvcs []*corev1.PersistentVolumeClaim, reuse bool) []string {
	return pickIDs(n, pods, pvcs, reuse, randomID)
}

// pickIDs is availableIDs with fresh ids drawn from draw; it returns fewer
// than n when the space is nearly full.
func pickIDs(n int, pods []*corev1.Pod, pvcs []*corev1.PersistentVolumeClaim, reuse bool, draw func() string) []string {
	active, terminating := sets.New[string](), sets.New[string]()
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			active.Insert(instanceID(p))
		} else {
			terminating.Insert(instanceID(p))
		}
	}
	free := sets.New[string]()
	for _, pvc := range pvcs {
		if id := instanceID(pvc); id != "" && !active.Has(id) && pvc.DeletionTimestamp == nil {
			free.Insert(id)
		}
	}
	var out []string
	if reuse {
		waiting := 0
		for _, id := range sets.List(free) {
			if len(out)+waiting == n {
				break
			}
			if terminating.Has(id) {
				waiting++
				continue
			}
			out = append(out, id)
		}
		n -= waiting
	}
	used := active.Union(terminating).Union(free)
	return append(out, freshIDs(n-len(out), used, draw)...)
}

func randomID() string { return utilrand.String(instanceIDLength) }

// idAttempts bounds the random draws per id freshIDs needs. A draw fails
// with probability used/27^5: below 0.7% at pub.MaxReplicas pods, so 64
// failures in a row only happen when the space is nearly full — and then the
// loop ends instead of spinning (it never would end once every id is taken).
const idAttempts = 64

// freshIDs draws up to n ids not in used (and adds them to it), giving up
// after idAttempts draws per id; it may return fewer than n.
func freshIDs(n int, used sets.Set[string], draw func() string) []string {
	out := make([]string, 0, max(n, 0))
	for tries := n * idAttempts; len(out) < n && tries > 0; tries-- {
		if id := draw(); !used.Has(id) {
			used.Insert(id)
			out = append(out, id)
		}
	}
	return out
}
