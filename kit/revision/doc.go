// Package revision keeps the ControllerRevision history of a workload: the
// record of every pod template a CloneSet, Advanced StatefulSet or Advanced
// DaemonSet has run, from which pods are labelled (controller-revision-hash),
// rollouts are tracked (status.currentRevision / updateRevision) and
// `kubectl-kruise rollout history|undo` reads and restores templates.
//
// It exists because the three workloads must write that history exactly as
// OpenKruise does (which in turn uses Kubernetes' history helpers) so that
// the two stay wire-compatible: same revision data bytes, same names, same
// labels, annotations and controllerRef, same truncation rule. Flotilla does
// not depend on k8s.io/kubernetes, so the few lines involved are
// re-implemented here.
//
// # Wire contract
//
//   - Data is TemplatePatch(template): {"spec":{"template":{…,"$patch":"replace"}}},
//     keys sorted, HTML characters escaped (encoding/json), so equal
//     templates always give equal bytes, and those bytes equal what
//     kubectl-kruise computes to decide "already matches" on undo. The
//     template metadata holds "creationTimestamp":null, as OpenKruise v1.9's
//     Kubernetes 1.32 encoder writes it, so the bytes (hash, name) equal
//     OpenKruise's; Resolve also reuses a revision whose data is only
//     Equivalent (null members = absent), e.g. one an older Flotilla wrote.
//   - Name is "<parent>-<Hash(data, collisionCount)>"; the hash is also
//     stored in the label controller.kubernetes.io/hash (HashLabel).
//   - Labels are the template labels (so the workload's selector finds its
//     revisions), annotations are all of the workload's annotations (e.g.
//     kubernetes.io/change-cause), the controllerRef points at the workload.
//   - .revision grows monotonically; rolling back to an older template reuses
//     that revision object and bumps its .revision (UpdateRevision).
//
// # Usage (one sync of a workload)
//
//	// setup: controller.AddOwnerUIDIndex(revInformer.Informer()) before start
//	lister := revision.NewLister(revInformer.Informer().GetIndexer())
//	control := revisionclient.New(kubeClient)      // kit/revision/revisionclient: this package links no clientset
//
//	revs, err := lister.List(cs)                    // controlled by cs, sorted oldest first; read-only
//	data, err := revision.TemplatePatch(&cs.Spec.Template)
//	next := revision.NextRevisionNumber(revs)
//	collisions := cs.Status.CollisionCount          // *int32; allocate if nil
//	var update *appsv1.ControllerRevision
//	if eq := revision.FindEqual(revs, data); len(eq) > 0 {
//		update = eq[len(eq)-1]
//		if update.Revision != revs[len(revs)-1].Revision { // a rollback: make it the newest
//			update, err = control.UpdateRevision(ctx, update, next)
//		}
//	} else {
//		rev := revision.New(cs, kind, cs.Spec.Template.Labels, data, next, collisions)
//		update, err = control.Create(ctx, cs, rev, collisions) // may bump *collisions: persist it in status
//	}
//	…
//	// after status is written:
//	live := sets.New(currentName, update.Name)        // + every pod's controller-revision-hash
//	for _, r := range revision.Truncate(revs, live, int(*cs.Spec.RevisionHistoryLimit)) {
//		err = control.Delete(ctx, r)
//	}
package revision
