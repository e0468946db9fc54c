package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// Item 3 (+4): an every-minute schedule creates a correctly named, annotated and owned Job at the start time,
// the status shows it, and its completion reconciles the AdvancedCronJob at once (the clock is not moved).
func TestEveryMinuteCreatesOwnedJob(t *testing.T) {
	h := newHarness(t)
	h.startController()
	acj := h.create(newACJ("minutely", longRunning))
	h.waitStatus(acj.Name, "type Job", func(st appsv1alpha1.AdvancedCronJobStatus) bool { return st.Type == appsv1alpha1.JobTemplate })

	s1 := nextMinute(acj)
	h.stepTo(s1.Add(time.Second))
	j := h.waitJob(childName(acj, s1))
	assert.Equal(t, s1.UTC().Format(time.RFC3339), j.Annotations[pub.AdvancedCronJobScheduledAtAnnotation])
	assert.Equal(t, "batch", j.Annotations["team"], "template annotations are copied")
	assert.Equal(t, "minutely", j.Labels["app"], "template labels are copied")
	ref := metav1.GetControllerOf(&j)
	require.NotNil(t, ref)
	assert.Equal(t, acj.UID, ref.UID)
	assert.Equal(t, "AdvancedCronJob", ref.Kind)
	assert.Equal(t, "apps.kruise.io/v1alpha1", ref.APIVersion)
	assert.True(t, ptr.Deref(ref.BlockOwnerDeletion, false))

	st := h.waitStatus(acj.Name, "the Job active", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
		return len(st.Active) == 1 && scheduledAt(s1)(st)
	})
	assert.Equal(t, appsv1alpha1.JobTemplate, st.Type)
	assert.Equal(t, corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: h.NS, Name: j.Name, UID: j.UID}, st.Active[0])

	// Completion: no clock step, so only the Job watch can bring the AdvancedCronJob back.
	h.finishJob(j.Name, "Succeeded")
	h.waitJobFinished(j.Name)
	h.waitStatus(acj.Name, "no active children after the Job completed", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
		return len(st.Active) == 0 && scheduledAt(s1)(st)
	})
	assert.Len(t, h.jobs(acj), 1)
}

// Item 1: @hourly-style descriptors.
func TestHourlyDescriptor(t *testing.T) {
	h := newHarness(t)
	h.startController()
	acj := h.create(newACJ("hourly", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.Schedule = "@hourly" }))
	h.waitStatus(acj.Name, "type Job", func(st appsv1alpha1.AdvancedCronJobStatus) bool { return st.Type != "" })
	slot := acj.CreationTimestamp.Truncate(time.Hour).Add(time.Hour)
	h.stepTo(slot.Add(2 * time.Second))
	h.waitJob(childName(acj, slot))
	h.waitStatus(acj.Name, "scheduled on the hour", scheduledAt(slot))
	assert.Len(t, h.jobs(acj), 1)
}

// Item 1: spec.timeZone (and the CRON_TZ= prefix) place a fixed-hour schedule in that zone.
func TestTimeZone(t *testing.T) {
	cases := []struct {
		name, schedule string
		timeZone       *string
		loc            string
		hour, minute   int
	}{
		{name: "asia-tokyo", schedule: "30 14 * * *", timeZone: ptr.To("Asia/Tokyo"), loc: "Asia/Tokyo", hour: 14, minute: 30},
		{name: "etc-utc", schedule: "0 12 * * *", timeZone: ptr.To("Etc/UTC"), loc: "Etc/UTC", hour: 12},
		{name: "cron-tz-prefix", schedule: "CRON_TZ=America/New_York 15 9 * * *", loc: "America/New_York", hour: 9, minute: 15},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.startController()
			acj := h.create(newACJ("tz-"+tc.name, func(a *appsv1alpha1.AdvancedCronJob) {
				a.Spec.Schedule, a.Spec.TimeZone = tc.schedule, tc.timeZone
			}))
			h.waitStatus(acj.Name, "type Job", func(st appsv1alpha1.AdvancedCronJobStatus) bool { return st.Type != "" })
			loc, err := time.LoadLocation(tc.loc)
			require.NoError(t, err)
			c := acj.CreationTimestamp.In(loc)
			slot := time.Date(c.Year(), c.Month(), c.Day(), tc.hour, tc.minute, 0, 0, loc)
			if !slot.After(c) {
				slot = time.Date(c.Year(), c.Month(), c.Day()+1, tc.hour, tc.minute, 0, 0, loc)
			}
			h.stepTo(slot.Add(time.Second))
			j := h.waitJob(childName(acj, slot))
			got, err := time.Parse(time.RFC3339, j.Annotations[pub.AdvancedCronJobScheduledAtAnnotation])
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("%02d:%02d", tc.hour, tc.minute), got.In(loc).Format("15:04"), "scheduled at the zone's wall-clock time")
			h.waitStatus(acj.Name, "scheduled", scheduledAt(slot))
		})
	}
}

// Item 2: concurrencyPolicy with children that keep running.
func TestConcurrencyPolicy(t *testing.T) {
	t.Run("Allow", func(t *testing.T) {
		h := newHarness(t)
		h.startController()
		acj := h.create(newACJ("allow", longRunning))
		s1 := nextMinute(acj)
		s2 := s1.Add(time.Minute)
		h.stepTo(s1.Add(time.Second))
		h.waitStatus(acj.Name, "first run", scheduledAt(s1))
		h.stepTo(s2.Add(time.Second))
		st := h.waitStatus(acj.Name, "two runs active", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
			return len(st.Active) == 2 && scheduledAt(s2)(st)
		})
		assert.Equal(t, []string{childName(acj, s1), childName(acj, s2)}, activeNames(st))
	})
	t.Run("Forbid", func(t *testing.T) {
		h := newHarness(t)
		h.startController()
		acj := h.create(newACJ("forbid", longRunning, func(a *appsv1alpha1.AdvancedCronJob) {
			a.Spec.ConcurrencyPolicy = appsv1alpha1.ForbidConcurrent
		}))
		s1 := nextMinute(acj)
		s2 := s1.Add(time.Minute)
		h.stepTo(s1.Add(time.Second))
		h.waitStatus(acj.Name, "first run", scheduledAt(s1))
		h.stepTo(s2.Add(time.Second))
		h.WaitEvent(acj.Name, "JobAlreadyActive")
		assert.Equal(t, map[string]bool{childName(acj, s1): true}, h.liveJobNames(acj), "no second run while the first is active")

		// The first run finishing frees the slot: the missed s2 run starts without moving the clock.
		h.finishJob(childName(acj, s1), "Succeeded")
		st := h.waitStatus(acj.Name, "the s2 run active", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
			return scheduledAt(s2)(st) && len(st.Active) == 1
		})
		assert.Equal(t, []string{childName(acj, s2)}, activeNames(st))
	})
	t.Run("Replace", func(t *testing.T) {
		h := newHarness(t)
		h.startController()
		acj := h.create(newACJ("replace", longRunning, func(a *appsv1alpha1.AdvancedCronJob) {
			a.Spec.ConcurrencyPolicy = appsv1alpha1.ReplaceConcurrent
		}))
		s1 := nextMinute(acj)
		s2 := s1.Add(time.Minute)
		h.stepTo(s1.Add(time.Second))
		h.waitStatus(acj.Name, "first run", scheduledAt(s1))
		h.stepTo(s2.Add(time.Second))
		st := h.waitStatus(acj.Name, "the s2 run replaced s1", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
			return scheduledAt(s2)(st) && len(st.Active) == 1 && st.Active[0].Name == childName(acj, s2)
		})
		assert.Equal(t, []string{childName(acj, s2)}, activeNames(st))
		testenv.Eventually(t, waitTimeout, func() (bool, error) {
			live := h.liveJobNames(acj)
			return len(live) == 1 && live[childName(acj, s2)], nil
		})
		h.WaitEvent(acj.Name, "SuccessfulDelete")
	})
}

// Item 2: a start time missed by more than startingDeadlineSeconds is skipped; the next one runs.
func TestStartingDeadlineSkipsLateRuns(t *testing.T) {
	h := newHarness(t)
	h.startController()
	acj := h.create(newACJ("deadline", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.StartingDeadlineSeconds = ptr.To[int64](10) }))
	s1 := nextMinute(acj)
	h.stepTo(s1.Add(30 * time.Second))
	h.WaitEvent(acj.Name, "MissSchedule")
	assert.Empty(t, h.jobs(acj), "30s late with a 10s deadline: skipped")

	s2 := s1.Add(time.Minute)
	h.stepTo(s2.Add(2 * time.Second))
	h.waitJob(childName(acj, s2))
	h.waitStatus(acj.Name, "s2 ran", scheduledAt(s2))
	assert.Len(t, h.jobs(acj), 1)
}

// After a long outage (more than 100 missed start times) the most recent start time still runs, with a Warning
// TooManyMissedTimes, as the upstream CronJob controller does; OpenKruise starts nothing and, counting from its last
// run, never again (issue 26 item 3: that wedge is a deliberate difference). The next start time then runs as usual,
// without another warning.
func TestTooManyMissedRunsStartTheMostRecent(t *testing.T) {
	h := newHarness(t)
	h.startController()
	acj := h.create(newACJ("outage"))
	now := acj.CreationTimestamp.Add(3*time.Hour + 20*time.Second)
	h.stepTo(now)
	ev := h.WaitEvent(acj.Name, "TooManyMissedTimes")
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	last := now.Truncate(time.Minute)
	assert.Contains(t, ev.Message, "only the most recent, "+last.UTC().Format(time.RFC3339))
	h.waitJob(childName(acj, last))
	h.waitStatus(acj.Name, "the most recent missed run", scheduledAt(last))
	assert.Equal(t, []string{childName(acj, last)}, keys(h.jobs(acj)))

	// Counting restarts from that run: the next start time runs with no new warning.
	warned, _ := h.eventCount(acj.Name, "TooManyMissedTimes")
	next := last.Add(time.Minute)
	h.stepTo(next.Add(time.Second))
	h.waitJob(childName(acj, next))
	h.waitStatus(acj.Name, "the next run", scheduledAt(next))
	n, _ := h.eventCount(acj.Name, "TooManyMissedTimes")
	assert.Equal(t, warned, n, "no warning once the schedule has caught up")
}

// Item 2: paused schedules nothing; unpausing starts the most recent missed run.
func TestPaused(t *testing.T) {
	h := newHarness(t)
	h.startController()
	acj := h.create(newACJ("paused", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.Paused = ptr.To(true) }))
	h.waitStatus(acj.Name, "observed", func(st appsv1alpha1.AdvancedCronJobStatus) bool { return st.Type != "" })
	s1 := nextMinute(acj)
	s2 := s1.Add(time.Minute)
	h.stepTo(s2.Add(5 * time.Second))
	testenv.Consistently(t, 2*time.Second, func() error {
		if n := len(h.jobs(acj)); n != 0 {
			return fmt.Errorf("%d Jobs while paused", n)
		}
		return nil
	})

	_, err := h.Client.AppsV1alpha1().AdvancedCronJobs(h.NS).Patch(context.Background(), acj.Name, types.MergePatchType,
		[]byte(`{"spec":{"paused":false}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	h.waitJob(childName(acj, s2))
	h.waitStatus(acj.Name, "s2 ran", scheduledAt(s2))
	assert.Len(t, h.jobs(acj), 1, "only the most recent missed run")
}

// Item 2: the oldest finished children beyond successfulJobsHistoryLimit / failedJobsHistoryLimit are deleted.
func TestHistoryLimits(t *testing.T) {
	cases := []struct {
		name  string
		phase string // how kwok ends the pods; "" = Jobs' pods succeed on their own
		runs  int
		keep  int
	}{
		{name: "succeeded", runs: 4, keep: 2},
		{name: "failed", phase: "Failed", runs: 3, keep: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.startController()
			acj := h.create(newACJ("history-"+tc.name, func(a *appsv1alpha1.AdvancedCronJob) {
				a.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](2)
				a.Spec.FailedJobsHistoryLimit = ptr.To[int32](1)
				if tc.phase != "" {
					a.Spec.Template.JobTemplate.Spec.Template.Annotations = map[string]string{lab.KwokComplete: tc.phase}
				}
			}))
			slot := nextMinute(acj)
			var names []string
			for i := 0; i < tc.runs; i++ {
				h.stepTo(slot.Add(time.Second))
				names = append(names, childName(acj, slot))
				h.waitJobFinished(childName(acj, slot))
				h.waitStatus(acj.Name, "run finished", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
					return scheduledAt(slot)(st) && len(st.Active) == 0
				})
				slot = slot.Add(time.Minute)
			}
			want := map[string]bool{}
			for _, n := range names[tc.runs-tc.keep:] {
				want[n] = true
			}
			testenv.Eventually(t, waitTimeout, func() (bool, error) {
				live := h.liveJobNames(acj)
				return fmt.Sprint(live) == fmt.Sprint(want), nil
			})
		})
	}
}

// Item 3: a broadcastJobTemplate makes BroadcastJob children and status.type BroadcastJob. No BroadcastJob
// reconciler runs here, so the test finishes the child through its status subresource.
func TestBroadcastJobTemplate(t *testing.T) {
	h := newHarness(t)
	h.startController()
	acj := h.create(newACJ("broadcast", func(a *appsv1alpha1.AdvancedCronJob) {
		a.Spec.Template = appsv1alpha1.CronJobTemplate{BroadcastJobTemplate: &appsv1alpha1.BroadcastJobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "broadcast"}},
			Spec: appsv1alpha1.BroadcastJobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
			}}},
		}}
	}))
	h.waitStatus(acj.Name, "type BroadcastJob", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
		return st.Type == appsv1alpha1.BroadcastJobTemplate
	})
	s1 := nextMinute(acj)
	h.stepTo(s1.Add(time.Second))
	name := childName(acj, s1)
	bcjs := testenv.ObjectsOf(t, h.Client.AppsV1alpha1().BroadcastJobs(h.NS), waitTimeout)
	bcj := bcjs.WaitFor(name, "exists", func(*appsv1alpha1.BroadcastJob) bool { return true })
	assert.Equal(t, s1.UTC().Format(time.RFC3339), bcj.Annotations[pub.AdvancedCronJobScheduledAtAnnotation])
	assert.Equal(t, "broadcast", bcj.Labels["app"])
	require.NotNil(t, metav1.GetControllerOf(bcj))
	assert.Equal(t, acj.UID, metav1.GetControllerOf(bcj).UID)
	st := h.waitStatus(acj.Name, "the BroadcastJob active", func(st appsv1alpha1.AdvancedCronJobStatus) bool { return len(st.Active) == 1 })
	assert.Equal(t, corev1.ObjectReference{Kind: "BroadcastJob", APIVersion: "apps.kruise.io/v1alpha1", Namespace: h.NS, Name: name, UID: bcj.UID}, st.Active[0])

	bcjs.ModifyStatus(name, func(bcj *appsv1alpha1.BroadcastJob) {
		bcj.Status.Phase = appsv1alpha1.PhaseCompleted
		bcj.Status.Conditions = []appsv1alpha1.JobCondition{{Type: appsv1alpha1.JobComplete, Status: corev1.ConditionTrue,
			LastProbeTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	})
	h.waitStatus(acj.Name, "the completed BroadcastJob no longer active", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
		return len(st.Active) == 0 && scheduledAt(s1)(st)
	})
}

// Item 3: a controller started after another stopped (here with the status lost, as after a crash between the
// create and the status write) derives the last run from the children and neither re-runs nor replaces it.
// Replace makes a re-run visible: it would delete the running child and create a new one of the same name.
func TestRestartDoesNotRerunASlot(t *testing.T) {
	h := newHarness(t)
	stop := h.startController()
	acj := h.create(newACJ("restart", longRunning, func(a *appsv1alpha1.AdvancedCronJob) {
		a.Spec.ConcurrencyPolicy = appsv1alpha1.ReplaceConcurrent
	}))
	s1 := nextMinute(acj)
	h.stepTo(s1.Add(time.Second))
	first := h.waitJob(childName(acj, s1))
	h.waitStatus(acj.Name, "first run", func(st appsv1alpha1.AdvancedCronJobStatus) bool { return scheduledAt(s1)(st) && len(st.Active) == 1 })
	stop()

	_, err := h.Client.AppsV1alpha1().AdvancedCronJobs(h.NS).Patch(context.Background(), acj.Name, types.MergePatchType,
		[]byte(`{"status":{"active":null,"lastScheduleTime":null}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	require.Nil(t, h.get(acj.Name).Status.LastScheduleTime)

	h.stepTo(s1.Add(20 * time.Second))
	h.startController()
	h.waitStatus(acj.Name, "last run restored from the child", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
		return scheduledAt(s1)(st) && len(st.Active) == 1
	})
	jobs := h.jobs(acj)
	require.Len(t, jobs, 1)
	assert.Equal(t, first.UID, jobs[childName(acj, s1)].UID, "the s1 Job was neither replaced nor re-created")
	n, _ := h.eventCount(acj.Name, "SuccessfulCreate")
	assert.Equal(t, 1, n)
	n, _ = h.eventCount(acj.Name, "SuccessfulDelete")
	assert.Equal(t, 0, n)
}

// Items 1, 2, 5: what the API server rejects at admission (CRD schema and CEL rules).
func TestInvalidSpecsRejectedByTheAPIServer(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	acjs := h.Client.AppsV1alpha1().AdvancedCronJobs(h.NS)
	bcjTemplate := &appsv1alpha1.BroadcastJobTemplateSpec{Spec: appsv1alpha1.BroadcastJobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}}}
	cases := []struct {
		name   string
		mutate func(*appsv1alpha1.AdvancedCronJob)
		want   string // in the error message
	}{
		{"empty schedule", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.Schedule = "" }, "spec.schedule"},
		{"timeZone Local", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.TimeZone = ptr.To("Local") }, "spec.timeZone must be an IANA time zone name"},
		{"TZ= with timeZone", func(a *appsv1alpha1.AdvancedCronJob) {
			a.Spec.Schedule, a.Spec.TimeZone = "TZ=UTC * * * * *", ptr.To("UTC")
		}, "must not contain TZ= or CRON_TZ="},
		{"CRON_TZ= with timeZone", func(a *appsv1alpha1.AdvancedCronJob) {
			a.Spec.Schedule, a.Spec.TimeZone = "CRON_TZ=Asia/Shanghai */5 * * * *", ptr.To("Asia/Shanghai")
		}, "must not contain TZ= or CRON_TZ="},
		{"both templates", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.Template.BroadcastJobTemplate = bcjTemplate }, "exactly one of jobTemplate and broadcastJobTemplate"},
		{"no template", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.Template = appsv1alpha1.CronJobTemplate{} }, "exactly one of jobTemplate and broadcastJobTemplate"},
		{"unknown concurrencyPolicy", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.ConcurrencyPolicy = "Sometimes" }, "spec.concurrencyPolicy"},
		{"negative startingDeadlineSeconds", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.StartingDeadlineSeconds = ptr.To[int64](-1) }, "spec.startingDeadlineSeconds"},
		{"negative successfulJobsHistoryLimit", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](-1) }, "spec.successfulJobsHistoryLimit"},
		{"negative failedJobsHistoryLimit", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.FailedJobsHistoryLimit = ptr.To[int32](-1) }, "spec.failedJobsHistoryLimit"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := acjs.Create(ctx, newACJ(fmt.Sprintf("bad-%d", i), tc.mutate), metav1.CreateOptions{})
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	// Item 5: the template is immutable; other fields may change.
	acj := h.create(newACJ("immutable"))
	changed := acj.DeepCopy()
	changed.Spec.Template.JobTemplate.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	_, err := acjs.Update(ctx, changed, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
	assert.Contains(t, err.Error(), "spec.template is immutable")

	changed = acj.DeepCopy()
	changed.Spec.Template.JobTemplate.Labels["extra"] = "label"
	_, err = acjs.Update(ctx, changed, metav1.UpdateOptions{})
	assert.ErrorContains(t, err, "spec.template is immutable", "template metadata too")

	allowed := acj.DeepCopy()
	allowed.Spec.Schedule, allowed.Spec.Paused = "*/5 * * * *", ptr.To(true)
	allowed.Spec.ConcurrencyPolicy = appsv1alpha1.ForbidConcurrent
	allowed.Spec.TimeZone = ptr.To("Europe/Paris")
	_, err = acjs.Update(ctx, allowed, metav1.UpdateOptions{})
	require.NoError(t, err, "schedule, paused, concurrencyPolicy and timeZone stay mutable")
}

// Item 1: what admission cannot check (cron value ranges, garbage with five fields) is reported by the
// controller: a Warning event, condition ScheduleValid=False, no child, and no retry loop.
func TestUnusableScheduleWarnsWithoutHotLoop(t *testing.T) {
	cases := []struct {
		name, schedule string
		timeZone       *string
		reason         string
	}{
		// An unknown timeZone is rejected at admission (CEL reads a time in it); the controller's own check,
		// for zones its embedded database lacks, is covered by the unit tests.
		{"garbage", "every minute of the day", nil, "InvalidSchedule"}, // five fields: passes admission, not the parser
		{"out-of-range", "61 * * * *", nil, "InvalidSchedule"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.startController()
			acj := h.create(newACJ(tc.name, func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.Schedule, a.Spec.TimeZone = tc.schedule, tc.timeZone }))
			ev := h.WaitEvent(acj.Name, tc.reason)
			assert.Equal(t, corev1.EventTypeWarning, ev.Type)
			h.waitStatus(acj.Name, "ScheduleValid=False with the event's reason", func(st appsv1alpha1.AdvancedCronJobStatus) bool {
				c := meta.FindStatusCondition(st.Conditions, appsv1alpha1.AdvancedCronJobScheduleValid)
				return st.Type != "" && c != nil && c.Status == metav1.ConditionFalse && c.Reason == tc.reason
			})
			// Each sync records the event once: its count is the number of syncs. Moving the clock over many minutes
			// fires no requeue, and nothing retries.
			h.stepTo(nextMinute(acj).Add(10 * time.Minute))
			testenv.Consistently(t, 2*time.Second, func() error {
				if n := len(h.jobs(acj)); n != 0 {
					return fmt.Errorf("%d Jobs for an unusable schedule", n)
				}
				if n, _ := h.eventCount(acj.Name, tc.reason); n > 2 {
					return fmt.Errorf("%s recorded %d times: the controller is looping", tc.reason, n)
				}
				return nil
			})
			assert.True(t, strings.Contains(ev.Message, "Not scheduling"), ev.Message)
		})
	}
}

func keys(m map[string]batchv1.Job) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
