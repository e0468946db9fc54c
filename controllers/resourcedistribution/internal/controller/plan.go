package controller

import (
	"errors"
	"fmt"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// op is what one sync does in one namespace.
type op int

const (
	opNone     op = iota // the copy is up to date
	opCreate             // no copy in the cache: create it
	opUpdate             // our copy differs: update it
	opDelete             // our copy in a namespace that is no longer a target: delete it
	opNotExist           // target namespace missing or terminating
	opConflict           // an object of that name we do not control: left alone
	opWait               // our last write to the copy is not in the cache yet: decide on the next sync
)

// action is one namespace's op; existing is the cached copy it acts on (update, delete).
type action struct {
	ns       string
	op       op
	existing metav1.Object
}

// writes reports whether the op writes to the API server.
func (o op) writes() bool { return o == opCreate || o == opUpdate || o == opDelete }

// planInput is what plan reads, all from caches.
type planInput struct {
	rdName     string
	src        *source
	want       desiredMeta
	targets    []string
	namespaces map[string]*corev1.Namespace
	// cached returns the labelled copy of the source's kind and name in ns (nil if none).
	cached func(ns string) metav1.Object
	// owned are the cached copies this distribution controls, in any namespace.
	owned []metav1.Object
	// pending reports whether a write of ours to obj is not in the cache yet.
	pending func(obj metav1.Object) bool
}

// plan decides, per target namespace and per copy no longer targeted, what to do. It is pure: the caller
// acts. An object of the source's name that is not in the cache (it lacks CopyLabel) is planned as a create;
// the create's AlreadyExists then reads it once to tell a conflict from a copy written before the label
// existed (e.g. by OpenKruise).
func plan(in planInput) []action {
	out := make([]action, 0, len(in.targets))
	targeted := make(map[string]bool, len(in.targets))
	for _, ns := range in.targets {
		targeted[ns] = true
		if n := in.namespaces[ns]; n == nil || n.DeletionTimestamp != nil || n.Status.Phase == corev1.NamespaceTerminating {
			out = append(out, action{ns: ns, op: opNotExist})
			continue
		}
		existing := in.cached(ns)
		switch {
		case existing == nil:
			out = append(out, action{ns: ns, op: opCreate})
		case !isControlledBy(existing, in.rdName):
			out = append(out, action{ns: ns, op: opConflict, existing: existing})
		case in.pending(existing):
			out = append(out, action{ns: ns, op: opWait, existing: existing})
		case needsUpdate(existing, in.src.obj, in.want):
			out = append(out, action{ns: ns, op: opUpdate, existing: existing})
		default:
			out = append(out, action{ns: ns, op: opNone, existing: existing})
		}
	}
	for _, c := range in.owned {
		ns := c.GetNamespace()
		if targeted[ns] || c.GetDeletionTimestamp() != nil {
			continue
		}
		// A namespace being deleted takes its copy with it.
		if n := in.namespaces[ns]; n == nil || n.DeletionTimestamp != nil {
			continue
		}
		out = append(out, action{ns: ns, op: opDelete, existing: c})
	}
	return out
}

// limitWrites keeps the first max writing actions and turns the rest into waits, so one sync's work (and
// time) stays bounded whatever the number of namespaces; it reports whether any was deferred.
func limitWrites(actions []action, max int) bool {
	n, deferred := 0, false
	for i := range actions {
		if !actions[i].op.writes() {
			continue
		}
		if n < max {
			n++
			continue
		}
		actions[i].op, deferred = opWait, true
	}
	return deferred
}

// retryErrors joins the failed outcomes a retry can help; a deferred namespace (no failure) is requeued anyway.
func retryErrors(outcomes []outcome) error {
	var errs []error
	for _, o := range outcomes {
		// Conflicts and missing namespaces wait for an event (as in OpenKruise); API errors are retried.
		if !o.ok && o.failed != "" && o.failed != appsv1alpha1.ResourceDistributionConflictOccurred &&
			o.failed != appsv1alpha1.ResourceDistributionNamespaceNotExists {
			errs = append(errs, fmt.Errorf("%s in namespace %s: %s", o.failed, o.ns, o.reason))
		}
	}
	return errors.Join(errs...)
}
