package predownload

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// DaemonSetInput is what DecideDaemonSet looks at (gate
// PreDownloadImageForDaemonSetUpdate). Counts come from the DaemonSet's
// status, as OpenKruise reads them.
type DaemonSetInput struct {
	// Old are the DaemonSet's other revisions, Update its update revision.
	Old    []*appsv1.ControllerRevision
	Update *appsv1.ControllerRevision
	// StatusHash, Desired and Updated are status.daemonSetHash,
	// desiredNumberScheduled and updatedNumberScheduled.
	StatusHash       string
	Desired, Updated int
	// Partition and MaxUnavailable are resolved against Desired
	// (maxUnavailable defaulting to 1, rounded up; partition rounded down).
	Partition, MaxUnavailable int
}

// DecideDaemonSet is OpenKruise's Advanced DaemonSet pre-download rule,
// which differs from the in-place one of Decide: every rollout qualifies
// (recreate too: the new pod pulls the same image), nothing waits for
// updated ready pods, and the images are those of the update revision that
// no old revision runs in a container of the same name.
//   - status shows every pod updated at the update revision: delete the jobs;
//   - decision already recorded on the update revision: wait;
//   - no partition and maxUnavailable covering every node (one batch): ignore;
//   - otherwise create one job per new image (label the revision even when
//     there is none, so the decision is taken once).
func DecideDaemonSet(in DaemonSetInput) Decision {
	if in.Update == nil {
		return Decision{Action: Wait, Reason: "no update revision"}
	}
	if in.Updated == in.Desired && in.StatusHash == revision.ShortHash(in.Update.Name) {
		return Decision{Action: DeleteJobs, Reason: "every pod updated"}
	}
	if _, ok := in.Update.Labels[pub.ImagePreDownloadCreatedKey]; ok {
		return Decision{Action: Wait, Reason: "jobs already created for this revision"}
	}
	if _, ok := in.Update.Labels[pub.ImagePreDownloadIgnoredKey]; ok {
		return Decision{Action: Wait, Reason: "revision already ignored"}
	}
	if in.Partition == 0 && in.MaxUnavailable >= in.Desired {
		return Decision{Action: Ignore, Reason: "every pod is updated in one batch"}
	}
	return Decision{Action: Create, Images: newImages(in.Old, in.Update), Reason: "rolling update"}
}

// newImages maps each container of update to its image when some old
// revision runs another image in a container of that name, or none has such
// a container (OpenKruise's rule: a node may still run any old revision). An
// undecodable revision yields nothing (the rollout goes on without
// pre-download).
func newImages(old []*appsv1.ControllerRevision, update *appsv1.ControllerRevision) map[string]string {
	tmpl, err := revision.Template(update)
	if err != nil {
		return nil
	}
	var olds []*corev1.PodTemplateSpec
	for _, r := range old {
		t, err := revision.Template(r)
		if err != nil {
			return nil
		}
		olds = append(olds, t)
	}
	out := map[string]string{}
	for _, c := range tmpl.Spec.Containers {
		found := false
		for _, t := range olds {
			for _, oc := range t.Spec.Containers {
				if oc.Name == c.Name {
					found = true
					if oc.Image != c.Image {
						out[c.Name] = c.Image
					}
				}
			}
		}
		if !found {
			out[c.Name] = c.Image
		}
	}
	return out
}
