// Package protect decides OpenKruise's delete-protection for the objects
// whose decision needs a lookup — a Namespace (its active pods and bound
// PersistentVolumeClaims) and a CustomResourceDefinition (its objects) —
// and serves that decision as an admission webhook. The decisions CEL can
// make on the old object alone (Always on every kind, Cascading on
// workloads) are ValidatingAdmissionPolicies in
// deploy/components/deletionprotection; the messages here and there are
// OpenKruise's.
package protect

import (
	"fmt"

	"github.com/flotilla-dev/flotilla/kit/features"
)

// The label and its values, as OpenKruise names them (policy/v1alpha1).
const (
	Label     = "policy.kruise.io/delete-protection"
	Always    = "Always"
	Cascading = "Cascading"
)

// Counts are what a Cascading decision looks up. A nil count was not
// looked up (the decision does not need it).
type Counts struct {
	// ActivePods: pods of the namespace neither Succeeded, Failed nor
	// being deleted (Kubernetes' "active pod").
	ActivePods int
	// BoundPVCs: claims of the namespace in phase Bound, not being deleted.
	BoundPVCs int
	// Objects: objects of the CRD not being deleted, in every namespace.
	Objects int
}

// forbidden is OpenKruise's denial prefix, followed by the label and its
// value (and, for Cascading, the dependants).
func forbidden(value, reason string) string {
	msg := fmt.Sprintf("forbidden by ResourcesProtectionDeletion for %s=%s", Label, value)
	if reason != "" {
		msg += " and " + reason
	}
	return msg
}

// AlwaysMessage is the denial of a deletion labelled Always (every kind).
func AlwaysMessage() string { return forbidden(Always, "") }

// Namespace returns the denial of deleting a namespace labelled value with
// counts c, or "" when it may be deleted. Active pods are checked before
// bound claims, and each reported by its count, as in OpenKruise.
func Namespace(value string, c Counts) string {
	switch value {
	case Always:
		return AlwaysMessage()
	case Cascading:
		if c.ActivePods > 0 {
			return forbidden(Cascading, fmt.Sprintf("active pods %d>0", c.ActivePods))
		}
		if c.BoundPVCs > 0 {
			return forbidden(Cascading, fmt.Sprintf("\"Bound\" status pvc %d>0", c.BoundPVCs))
		}
	}
	return ""
}

// CRDGateOffMessage is the denial of a Cascading CRD deletion while
// DeletionProtectionForCRDCascadingGate is off: OpenKruise refuses rather
// than deleting objects it was asked to protect.
func CRDGateOffMessage() string {
	return fmt.Sprintf("feature-gate %s is not enabled", features.DeletionProtectionForCRDCascadingGate)
}

// CRD returns the denial of deleting a CustomResourceDefinition labelled
// value with c.Objects existing objects, or "" when it may be deleted.
func CRD(value string, cascadingGate bool, c Counts) string {
	switch value {
	case Always:
		return AlwaysMessage()
	case Cascading:
		if !cascadingGate {
			return CRDGateOffMessage()
		}
		if c.Objects > 0 {
			return forbidden(Cascading, fmt.Sprintf("active CRs %d>0", c.Objects))
		}
	}
	return ""
}

// NeedsLookup reports whether deciding an object labelled value needs its
// dependants counted (only Cascading does; for a CRD only with the gate on).
func NeedsLookup(value string, crd, cascadingGate bool) bool {
	return value == Cascading && (!crd || cascadingGate)
}
