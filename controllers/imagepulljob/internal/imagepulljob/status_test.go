package imagepulljob

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

func uid(s string) k8stypes.UID { return k8stypes.UID(s) }

// withTag is a NodeImage carrying nginx:1.25 at version v for owner, reporting phase at reported ("" none).
func withTag(name string, owner *appsv1beta1.ImagePullJob, v int64, reported int64, phase appsv1beta1.ImagePullPhase) *appsv1beta1.NodeImage {
	ni := nodeImage(name, nil)
	ni.Spec.Images = map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{{Tag: "1.25", Version: v,
		OwnerReferences: []corev1.ObjectReference{ownerRef(owner)}}}}}
	if phase != "" {
		ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{"nginx": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "1.25", Version: reported, Phase: phase}}}}
	}
	return ni
}

func TestCalculateStatus(t *testing.T) {
	start := metav1.NewTime(time.Unix(1000, 0))
	now := metav1.NewTime(time.Unix(1010, 0))
	a, other := job("a"), job("other")
	secret := appsv1beta1.ReferenceObject{Namespace: "flotilla-node", Name: "s"}
	nis := []*appsv1beta1.NodeImage{
		withTag("ok", a, 1, 1, appsv1beta1.ImagePhaseSucceeded),
		withTag("bad", a, 1, 1, appsv1beta1.ImagePhaseFailed),
		withTag("stale", a, 2, 1, appsv1beta1.ImagePhaseSucceeded), // reports an older round: still active
		withTag("pulling", a, 0, 0, appsv1beta1.ImagePhasePulling),
		withTag("others", other, 0, 0, appsv1beta1.ImagePhaseSucceeded), // another job's tag: not synced for a
		nodeImage("empty", nil),
	}
	for _, c := range []struct {
		name      string
		mutate    func(j *appsv1beta1.ImagePullJob)
		nis       []*appsv1beta1.NodeImage
		secrets   []appsv1beta1.ReferenceObject
		want      appsv1beta1.ImagePullJobStatus
		notSynced []string
	}{
		{name: "running", nis: nis,
			want: appsv1beta1.ImagePullJobStatus{StartTime: &start, Desired: 6, Active: 2, Succeeded: 1, Failed: 1, FailedNodes: []string{"bad"},
				Message: "job is running, progress 33.3%"},
			notSynced: []string{"empty", "others"}},
		{name: "all finished: completed", nis: nis[:2],
			want: appsv1beta1.ImagePullJobStatus{StartTime: &start, CompletionTime: &now, Desired: 2, Succeeded: 1, Failed: 1, FailedNodes: []string{"bad"},
				Message: "job has completed"}},
		{name: "Never never completes", nis: nis[:2], mutate: func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.Type = appsv1beta1.Never },
			want: appsv1beta1.ImagePullJobStatus{StartTime: &start, Desired: 2, Succeeded: 1, Failed: 1, FailedNodes: []string{"bad"},
				Message: "job is running, progress 100.0%"}},
		{name: "no nodes", want: appsv1beta1.ImagePullJobStatus{StartTime: &start, CompletionTime: &now, Message: "job has completed"}},
		{name: "no nodes, Never", mutate: func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.Type = appsv1beta1.Never },
			want: appsv1beta1.ImagePullJobStatus{StartTime: &start, Message: "job is running, no progress"}},
		{name: "deadline passed: unfinished nodes fail", nis: nis,
			mutate: func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](10) },
			want: appsv1beta1.ImagePullJobStatus{StartTime: &start, CompletionTime: &now, Desired: 6, Succeeded: 1, Failed: 5,
				FailedNodes: []string{"bad", "empty", "others", "pulling", "stale"}, Message: "job exceeds activeDeadlineSeconds"}},
		{name: "deadline not yet", nis: nis[:1],
			mutate: func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](11) },
			want:   appsv1beta1.ImagePullJobStatus{StartTime: &start, CompletionTime: &now, Desired: 1, Succeeded: 1, Message: "job has completed"}},
		{name: "a missing secret: written again, still counted", nis: nis[:1], secrets: []appsv1beta1.ReferenceObject{secret},
			want:      appsv1beta1.ImagePullJobStatus{StartTime: &start, CompletionTime: &now, Desired: 1, Succeeded: 1, Message: "job has completed"},
			notSynced: []string{"ok"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := a.DeepCopy()
			j.Spec.CompletionPolicy.Type = appsv1beta1.Always
			j.Status.StartTime = &start
			if c.mutate != nil {
				c.mutate(j)
			}
			st, notSynced := calculateStatus(j, c.nis, "nginx", "1.25", c.secrets, now)
			assert.Equal(t, c.want, st)
			assert.Equal(t, c.notSynced, notSynced)
		})
	}
}

func TestDeadlineLeft(t *testing.T) {
	start := metav1.NewTime(time.Unix(1000, 0))
	j := job("a")
	j.Spec.CompletionPolicy = appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always, ActiveDeadlineSeconds: ptr.To[int64](30)}
	st := &appsv1beta1.ImagePullJobStatus{StartTime: &start}
	assert.Equal(t, 20*time.Second, deadlineLeft(j, st, time.Unix(1010, 0)))
	assert.Equal(t, time.Second, deadlineLeft(j, st, time.Unix(1040, 0)), "at least a second")
	j.Spec.CompletionPolicy.Type = appsv1beta1.Never
	assert.Zero(t, deadlineLeft(j, st, time.Unix(1010, 0)), "Never has no deadline")
}
