package imagepulljob

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// OpenKruise's status messages.
const (
	msgCompleted        = "job has completed"
	msgNoProgress       = "job is running, no progress"
	msgDeadlineExceeded = "job exceeds activeDeadlineSeconds"
)

// calculateStatus computes the job's status from its NodeImages as OpenKruise does, and returns the nodes whose
// NodeImage does not carry the job's tag (or lacks one of its pull secrets) yet, sorted: those are the next to
// write. A node counts as succeeded or failed once it reports that phase for the tag's current version, else as
// active. The job completes (unless completionPolicy is Never) when every node finished, or fails at
// activeDeadlineSeconds after startTime, all unfinished nodes then counted as failed.
func calculateStatus(job *appsv1beta1.ImagePullJob, nodeImages []*appsv1beta1.NodeImage, name, tag string,
	secrets []appsv1beta1.ReferenceObject, now metav1.Time) (appsv1beta1.ImagePullJobStatus, []string) {
	st := appsv1beta1.ImagePullJobStatus{StartTime: job.Status.StartTime, Desired: int32(len(nodeImages))}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	var pulling, succeeded, failed, notSynced []string
	for _, ni := range nodeImages {
		version, secretsSynced := jobTag(ni, job, name, tag, secrets)
		if version < 0 || !secretsSynced {
			notSynced = append(notSynced, ni.Name)
		}
		if version < 0 {
			continue
		}
		switch reportedPhase(ni, name, tag, version) {
		case appsv1beta1.ImagePhaseSucceeded:
			succeeded = append(succeeded, ni.Name)
		case appsv1beta1.ImagePhaseFailed:
			failed = append(failed, ni.Name)
		default:
			pulling = append(pulling, ni.Name)
		}
	}
	cp := job.Spec.CompletionPolicy
	finished := len(succeeded) + len(failed)
	if cp.Type != appsv1beta1.Never && cp.ActiveDeadlineSeconds != nil && int(st.Desired) != finished &&
		!now.Time.Before(st.StartTime.Add(time.Duration(*cp.ActiveDeadlineSeconds)*time.Second)) {
		failed = append(append(failed, pulling...), uniqueNotIn(notSynced, pulling)...)
		slices.Sort(failed)
		st.CompletionTime = &now
		st.Succeeded = int32(len(succeeded))
		st.Failed = int32(len(failed))
		st.FailedNodes = failed
		st.Message = msgDeadlineExceeded
		return st, nil
	}
	st.Active = int32(len(pulling))
	st.Succeeded = int32(len(succeeded))
	st.Failed = int32(len(failed))
	st.FailedNodes = failed
	slices.Sort(st.FailedNodes)
	if cp.Type != appsv1beta1.Never && st.Desired-st.Succeeded-st.Failed == 0 {
		st.CompletionTime = &now
	}
	st.Message = statusMessage(&st)
	slices.Sort(notSynced)
	return st, notSynced
}

// uniqueNotIn returns the names of a not in b (a node can be both pulling and missing a secret).
func uniqueNotIn(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// jobTag returns the version of the job's tag on the node (-1 when the node has no such tag owned by the job) and
// whether the image carries every pull secret of the job.
func jobTag(ni *appsv1beta1.NodeImage, job *appsv1beta1.ImagePullJob, name, tag string, secrets []appsv1beta1.ReferenceObject) (int64, bool) {
	img, ok := ni.Spec.Images[name]
	if !ok {
		return -1, true
	}
	synced := true
	for _, s := range secrets {
		if !hasSecret(img.PullSecrets, s) {
			synced = false
		}
	}
	for _, t := range img.Tags {
		if t.Tag != tag {
			continue
		}
		for _, r := range t.OwnerReferences {
			if r.UID == job.UID {
				return t.Version, synced
			}
		}
		break
	}
	return -1, synced
}

// reportedPhase is the phase the node reports for the tag at version, "" when it reports none (or an older one).
func reportedPhase(ni *appsv1beta1.NodeImage, name, tag string, version int64) appsv1beta1.ImagePullPhase {
	for _, t := range ni.Status.ImageStatuses[name].Tags {
		if t.Tag == tag {
			if t.Version != version {
				return ""
			}
			return t.Phase
		}
	}
	return ""
}

func statusMessage(st *appsv1beta1.ImagePullJobStatus) string {
	switch {
	case st.CompletionTime != nil:
		return msgCompleted
	case st.Desired == 0:
		return msgNoProgress
	}
	return fmt.Sprintf("job is running, progress %.1f%%", 100.0*float64(st.Succeeded+st.Failed)/float64(st.Desired))
}

// deadlineLeft is the time until the job's activeDeadlineSeconds, for a requeue; 0 when none applies.
func deadlineLeft(job *appsv1beta1.ImagePullJob, st *appsv1beta1.ImagePullJobStatus, now time.Time) time.Duration {
	cp := job.Spec.CompletionPolicy
	if cp.Type == appsv1beta1.Never || cp.ActiveDeadlineSeconds == nil || st.StartTime == nil || st.CompletionTime != nil {
		return 0
	}
	return max(st.StartTime.Add(time.Duration(ptr.Deref(cp.ActiveDeadlineSeconds, 0))*time.Second).Sub(now), time.Second)
}

// updateStatus writes st when it differs from the job's.
func (c *Controller) updateStatus(ctx context.Context, job *appsv1beta1.ImagePullJob, st appsv1beta1.ImagePullJobStatus) error {
	_, err := controller.WriteStatus(ctx, c.Client.AppsV1beta1().ImagePullJobs(job.Namespace), job,
		func(j *appsv1beta1.ImagePullJob) *appsv1beta1.ImagePullJobStatus { return &j.Status }, st, c.written)
	if err != nil {
		return fmt.Errorf("update status of ImagePullJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}
