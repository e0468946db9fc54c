// Package podcontrol is the one seam through which Flotilla controllers
// write pods. Nothing else under controllers/ or kit/ calls the clientset's
// pod Create, Delete, Update, UpdateStatus, Patch or Evict (a lint test,
// TestNoDirectPodWrites, holds the line), so the house rules are kept in one
// place:
//
//   - patches carry only the difference between the cached pod and the
//     desired one (PodPatch), guarded by the cached resourceVersion, so a
//     slimmed cache never clears what it dropped and a stale decision fails
//     with Conflict;
//   - deletes carry the pod's UID as a precondition, so a namesake created
//     meanwhile is never deleted;
//   - adoption and release patch only the ownerReference, guarded by UID;
//   - creates and deletes raise the owner's expectations before the request
//     and lower them when it certainly did nothing (Expectations; Scale and
//     NodeExpectations adapt kit/expectations), so callers never do it by
//     hand.
//
// Use:
//
//	pods := podclient.New(kube) // in the controller's New (kit/podcontrol/podclient)
//	_, err := pods.Create(ctx, pod, podcontrol.Scale(c.scaleExp, key))
//	err = pods.Delete(ctx, pod, podcontrol.Scale(c.scaleExp, key))
//	next := pod.DeepCopy(); next.Labels["x"] = "y"
//	out, err := pods.Patch(ctx, pod, next)        // no request when nothing changes
//	out, err = pods.PatchStatus(ctx, pod, next)   // status subresource
//
// In a sync test, give the controller podcontrol.NewFake() and assert on
// its Actions (verb, namespace, name, patch bytes or created pod).
//
// The requests go through a Writer (NewFor). The one over client-go's
// clientset lives in kit/podcontrol/podclient (New, Or, Clocked), so this
// package does not link the clientset: the node agent imports it and writes
// through a plain REST client (the clientset's init costs it about 20 MiB;
// kit/internal/depcheck holds the line).
package podcontrol
