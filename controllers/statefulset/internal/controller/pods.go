package controller

import (
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// kindStatefulSet is the kind pods, revisions and claims point their
// ownerReferences at.
var kindStatefulSet = appsv1beta1.SchemeGroupVersion.WithKind("StatefulSet")

// newPod builds the pod of one ordinal from a revision's template, with the
// identity upstream gives it:
//   - name <set>-<ordinal>, hostname the same, subdomain serviceName;
//   - labels: the template's, statefulset.kubernetes.io/pod-name,
//     apps.kubernetes.io/pod-index (PodIndexLabel), controller-revision-hash
//     = the revision's name, and the lifecycle state: Normal, or
//     PreparingNormal when a preNormal hook is set;
//   - the controllerRef to the set;
//   - readiness gate KruisePodReady on every pod, as OpenKruise's pod
//     webhook puts it on every pod of its workloads, so that a
//     markPodNotReady hook added later works on pods that exist already
//     (this controller owns that condition and writes it, with
//     InPlaceUpdateReady's when the template carries that gate, in one
//     status write; InPlaceUpdateReady comes from the template, as in
//     OpenKruise);
//   - one volume per volumeClaimTemplate, bound to the ordinal's claim.
func newPod(set *appsv1beta1.StatefulSet, rev *appsv1.ControllerRevision, tmpl *corev1.PodTemplateSpec, ordinal int, podIndexLabel bool) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: *tmpl.ObjectMeta.DeepCopy(),
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	pod.Name = podName(set.Name, ordinal)
	pod.Namespace = set.Namespace
	pod.GenerateName = ""
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, kindStatefulSet)}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[pub.StatefulSetPodNameLabel] = pod.Name
	if podIndexLabel {
		pod.Labels[pub.PodIndexLabel] = strconv.Itoa(ordinal)
	}
	pod.Labels[pub.ControllerRevisionHashLabelKey] = rev.Name
	state := pub.LifecycleStateNormal
	if set.Spec.Lifecycle != nil && set.Spec.Lifecycle.PreNormal != nil {
		state = pub.LifecycleStatePreparingNormal
	}
	pod.Labels[pub.LifecycleStateKey] = string(state)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName

	podutil.AddReadinessGate(pod, pub.KruisePodReadyConditionType)
	for _, vct := range set.Spec.VolumeClaimTemplates {
		podutil.SetClaimVolume(pod, vct.Name, claimName(vct.Name, set.Name, ordinal))
	}
	return pod
}

// newClaims returns the claims of one ordinal, one per
// volumeClaimTemplate, labelled with the selector's matchLabels as upstream.
// Their ownerReferences are claimOwners'.
func newClaims(set *appsv1beta1.StatefulSet, ordinal int) []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(set.Spec.VolumeClaimTemplates))
	for _, vct := range set.Spec.VolumeClaimTemplates {
		pvc := vct.DeepCopy()
		pvc.ObjectMeta = metav1.ObjectMeta{
			Name:        claimName(vct.Name, set.Name, ordinal),
			Namespace:   set.Namespace,
			Labels:      maps.Clone(vct.Labels),
			Annotations: maps.Clone(vct.Annotations),
		}
		if pvc.Labels == nil {
			pvc.Labels = map[string]string{}
		}
		if set.Spec.Selector != nil {
			maps.Copy(pvc.Labels, set.Spec.Selector.MatchLabels)
		}
		pvc.Status = corev1.PersistentVolumeClaimStatus{}
		out = append(out, pvc)
	}
	return out
}

// retention is persistentVolumeClaimRetentionPolicy with its defaults
// (Retain, Retain); with StatefulSetAutoDeletePVC off every claim is
// retained.
type retention struct {
	deleteWhenDeleted, deleteWhenScaled bool
}

func retentionOf(set *appsv1beta1.StatefulSet, enabled bool) retention {
	p := set.Spec.PersistentVolumeClaimRetentionPolicy
	if !enabled || p == nil {
		return retention{}
	}
	return retention{
		deleteWhenDeleted: p.WhenDeleted == appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType,
		deleteWhenScaled:  p.WhenScaled == appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType,
	}
}

// claimOwners returns the ownerReferences a claim should have, as upstream
// does: a reference to the set when whenDeleted is Delete (the garbage
// collector deletes the claim with the set), and, for the claim of a
// condemned ordinal under whenScaled Delete, a reference to that pod
// instead (the claim goes with the pod). The claim of an ordinal in the
// slots never references its own pod, so a pod recreated after an eviction
// finds its claim. References to anything else, including an earlier pod of
// the ordinal (see staleClaim), are kept. changed is false when nothing
// differs.
func claimOwners(current []metav1.OwnerReference, set *appsv1beta1.StatefulSet, pod *corev1.Pod, condemned bool, r retention) (out []metav1.OwnerReference, changed bool) {
	wantPod := condemned && r.deleteWhenScaled && pod != nil
	wantSet := r.deleteWhenDeleted && !wantPod
	hasSet, hasPod := false, false
	for _, ref := range current {
		switch {
		case ref.UID == set.UID:
			if wantSet {
				out, hasSet = append(out, ref), true
			}
		case pod != nil && ref.UID == pod.UID:
			if wantPod {
				out, hasPod = append(out, ref), true
			}
		default:
			out = append(out, ref)
		}
	}
	if wantSet && !hasSet {
		out = append(out, metav1.OwnerReference{APIVersion: kindStatefulSet.GroupVersion().String(), Kind: kindStatefulSet.Kind, Name: set.Name, UID: set.UID})
	}
	if wantPod && !hasPod {
		out = append(out, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID})
	}
	return out, !slices.EqualFunc(out, current, func(a, b metav1.OwnerReference) bool { return a.UID == b.UID })
}

// staleClaim reports whether a claim is owned by a pod of the ordinal that
// no longer exists (its uid differs from pod's, or there is no pod): the
// garbage collector is about to delete it, so a new pod must not bind to it
// and waits.
func staleClaim(claim *corev1.PersistentVolumeClaim, podName string, pod *corev1.Pod) bool {
	for _, ref := range claim.OwnerReferences {
		if ref.Kind == "Pod" && ref.Name == podName && (pod == nil || ref.UID != pod.UID) {
			return true
		}
	}
	return false
}
