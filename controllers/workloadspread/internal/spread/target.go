package spread

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// groupOf is the API group of an apiVersion ("" for core or unparsable).
func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// RefersTo reports whether an owner reference names the target directly
// (same group, kind and name; the version may differ, as OpenKruise).
func RefersTo(t *appsv1alpha1.TargetReference, ref *metav1.OwnerReference) bool {
	return t != nil && ref != nil && groupOf(t.APIVersion) == groupOf(ref.APIVersion) && t.Kind == ref.Kind && t.Name == ref.Name
}

// MaybeViaReplicaSet reports whether ref may be a ReplicaSet of the
// Deployment t names (the Deployment controller names its ReplicaSets
// <deployment>-<hash>); the caller confirms through the ReplicaSet's own
// controller reference.
func MaybeViaReplicaSet(t *appsv1alpha1.TargetReference, ref *metav1.OwnerReference) bool {
	return t != nil && ref != nil && t.Kind == "Deployment" && groupOf(t.APIVersion) == "apps" &&
		ref.Kind == "ReplicaSet" && groupOf(ref.APIVersion) == "apps" && strings.HasPrefix(ref.Name, t.Name+"-")
}

// Served reports whether ws takes part in admission: not being deleted,
// with a target.
func Served(ws *appsv1alpha1.WorkloadSpread) bool {
	return ws.DeletionTimestamp == nil && ws.Spec.TargetReference != nil
}
