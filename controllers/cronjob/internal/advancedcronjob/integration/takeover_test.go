package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// okChild mirrors advancedcronjob_broadcastjob_controller.go
// constructBrJobForCronJob: named <acj>-<unix seconds>, the template's labels
// and annotations plus apps.kruise.io/scheduled-at (RFC3339 in
// kruise-manager's zone, UTC in its image), the template's spec, and the
// controllerRef SetControllerReference writes (apps.kruise.io/v1beta1
// AdvancedCronJob: v1.9 reconciles v1beta1 objects).
func okChild(acj *appsv1alpha1.AdvancedCronJob, scheduled time.Time) *appsv1alpha1.BroadcastJob {
	tmpl := acj.Spec.Template.BroadcastJobTemplate
	lbls, ann := map[string]string{}, map[string]string{}
	for k, v := range tmpl.Labels {
		lbls[k] = v
	}
	for k, v := range tmpl.Annotations {
		ann[k] = v
	}
	ann[pub.AdvancedCronJobScheduledAtAnnotation] = scheduled.UTC().Format(time.RFC3339)
	return &appsv1alpha1.BroadcastJob{
		ObjectMeta: metav1.ObjectMeta{
			Name: childName(acj, scheduled), Namespace: acj.Namespace, Labels: lbls, Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps.kruise.io/v1beta1", Kind: "AdvancedCronJob", Name: acj.Name, UID: acj.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
}

// TestTakeoverFromOpenKruise (issue 23): an AdvancedCronJob (Forbid, every
// minute, BroadcastJob template) as OpenKruise v1.9 leaves it — a finished
// child of the first start time, a running child of the second, status.active
// and lastScheduleTime as advancedcronjob_broadcastjob_controller.go wrote
// them (ref.GetReference: v1beta1, with resourceVersion) — then Flotilla's
// reconciler starts twenty seconds into the second slot. Nothing is re-run,
// created or deleted; the running child stays the one active child; the
// next start time is not run while it is active (Forbid), and runs once it
// finishes.
func TestTakeoverFromOpenKruise(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	bcjs := testenv.ObjectsOf(t, h.Client.AppsV1alpha1().BroadcastJobs(h.NS), waitTimeout)
	acj := h.create(newACJ("okacj", func(a *appsv1alpha1.AdvancedCronJob) {
		a.Spec.ConcurrencyPolicy = appsv1alpha1.ForbidConcurrent
		// SetDefaultsAdvancedCronJob.
		a.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
		a.Spec.FailedJobsHistoryLimit = ptr.To[int32](1)
		a.Spec.Paused = ptr.To(false)
		a.Spec.Template = appsv1alpha1.CronJobTemplate{BroadcastJobTemplate: &appsv1alpha1.BroadcastJobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "okacj"}},
			Spec: appsv1alpha1.BroadcastJobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
			}}},
		}}
	}))
	s1 := nextMinute(acj)
	s2 := s1.Add(time.Minute)
	done := bcjs.Create(okChild(acj, s1))
	bcjs.ModifyStatus(done.Name, func(b *appsv1alpha1.BroadcastJob) {
		b.Status.Phase = appsv1alpha1.PhaseCompleted
		b.Status.Conditions = []appsv1alpha1.JobCondition{{Type: appsv1alpha1.JobComplete, Status: corev1.ConditionTrue,
			LastProbeTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	})
	running := bcjs.Create(okChild(acj, s2))
	running = bcjs.ModifyStatus(running.Name, func(b *appsv1alpha1.BroadcastJob) {
		b.Status.Phase = appsv1alpha1.PhaseRunning
		b.Status.Active, b.Status.Desired = 1, 1
	})
	h.acjs.ModifyStatus(acj.Name, func(a *appsv1alpha1.AdvancedCronJob) {
		a.Status.Type = appsv1alpha1.BroadcastJobTemplate
		a.Status.LastScheduleTime = &metav1.Time{Time: s2}
		a.Status.Active = []corev1.ObjectReference{{Kind: "BroadcastJob", Namespace: h.NS, Name: running.Name, UID: running.UID,
			APIVersion: "apps.kruise.io/v1beta1", ResourceVersion: running.ResourceVersion}}
	})
	children := func() map[string]*appsv1alpha1.BroadcastJob {
		list, err := h.Client.AppsV1alpha1().BroadcastJobs(h.NS).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		out := map[string]*appsv1alpha1.BroadcastJob{}
		for i := range list.Items {
			if list.Items[i].DeletionTimestamp == nil {
				out[list.Items[i].Name] = &list.Items[i]
			}
		}
		return out
	}
	unchanged := func() error {
		got := children()
		if len(got) != 2 || got[done.Name] == nil || got[done.Name].UID != done.UID || got[running.Name] == nil || got[running.Name].UID != running.UID {
			return assert.AnError
		}
		return nil
	}

	h.stepTo(s2.Add(20 * time.Second))
	h.startController()
	st := h.waitStatus(acj.Name, "OpenKruise's running child active", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
		return len(st.Active) == 1 && st.Active[0].UID == running.UID && scheduledAt(s2)(st) && st.Active[0].APIVersion != "apps.kruise.io/v1beta1"
	})
	assert.Equal(t, appsv1alpha1.BroadcastJobTemplate, st.Type)
	testenv.Consistently(t, 2*time.Second, unchanged)

	// The next start time while the child runs: Forbid, nothing created.
	s3 := s2.Add(time.Minute)
	h.stepTo(s3.Add(time.Second))
	h.WaitEvent(acj.Name, "JobAlreadyActive")
	testenv.Consistently(t, 2*time.Second, unchanged)

	// The child finishes: the missed start time runs, once.
	bcjs.ModifyStatus(running.Name, func(b *appsv1alpha1.BroadcastJob) {
		b.Status.Phase = appsv1alpha1.PhaseCompleted
		b.Status.Active = 0
		b.Status.Conditions = []appsv1alpha1.JobCondition{{Type: appsv1alpha1.JobComplete, Status: corev1.ConditionTrue,
			LastProbeTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	})
	bcjs.WaitFor(childName(acj, s3), "the missed start time runs", func(*appsv1alpha1.BroadcastJob) bool { return true })
	got := children()
	assert.Len(t, got, 3)
	assert.Equal(t, done.UID, got[done.Name].UID)
	assert.Equal(t, running.UID, got[running.Name].UID)
}
