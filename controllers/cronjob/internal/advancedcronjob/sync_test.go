package advancedcronjob

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// fixture is a Controller over fake clientsets whose caches are seeded by hand (never started), driven by a fake
// clock: sync is called directly and the test asserts on the client actions, the events and the queue.
type fixture struct {
	*wiringtest.Fakes
	t *testing.T
	c *Controller
}

const testNS = "ns"

func newFixture(t *testing.T, now string, acj *appsv1alpha1.AdvancedCronJob, kids ...runtime.Object) *fixture {
	t.Helper()
	objs := append([]runtime.Object{acj}, kids...)
	f := &fixture{Fakes: wiringtest.New(t, mustTime(t, now), objs...), t: t}
	c, err := New(f.Deps())
	require.NoError(t, err)
	c.defaultLoc = time.UTC
	f.c = c
	t.Cleanup(c.Queue.ShutDown)
	f.Cache(objs...)
	f.Clear()
	return f
}

// sync runs one sync and fails the test on an error the loop would retry; it returns the error (nil or
// permanent: reported, not retried). The writes it made add to those before (f.Clear forgets them).
func (f *fixture) sync() error {
	f.t.Helper()
	err := f.c.sync(context.Background(), types.NamespacedName{Namespace: testNS, Name: "acj"})
	require.NoError(f.t, controller.Retryable(err))
	return err
}

func (f *fixture) status() appsv1alpha1.AdvancedCronJobStatus {
	f.t.Helper()
	got, err := f.Client.AppsV1alpha1().AdvancedCronJobs(testNS).Get(context.Background(), "acj", metav1.GetOptions{})
	require.NoError(f.t, err)
	return got.Status
}

// queuedBy reports whether the key is (or becomes) ready in the queue once the fake clock reaches at. A negative
// answer waits 300ms for the queue's delay loop; a positive one usually returns at once.
func (f *fixture) queuedBy(at string) bool {
	f.Clock.SetTime(mustTime(f.t, at))
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 300*time.Millisecond, true,
		func(context.Context) (bool, error) { return f.c.Queue.Len() > 0, nil })
	return err == nil
}

func newACJ(created string, mutate ...func(*appsv1alpha1.AdvancedCronJob)) *appsv1alpha1.AdvancedCronJob {
	ts, _ := time.Parse(time.RFC3339, created)
	acj := &appsv1alpha1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "acj", Namespace: testNS, UID: "acj-uid", CreationTimestamp: metav1.NewTime(ts)},
		Spec: appsv1alpha1.AdvancedCronJobSpec{
			Schedule:          "* * * * *",
			ConcurrencyPolicy: appsv1alpha1.AllowConcurrent,
			Template: appsv1alpha1.CronJobTemplate{JobTemplate: &batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "demo"}, Annotations: map[string]string{"note": "x"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
				}}},
			}},
		},
	}
	for _, m := range mutate {
		m(acj)
	}
	return acj
}

// job is a child of newACJ scheduled at the given time, with the given terminal condition ("" = running).
func job(acj *appsv1alpha1.AdvancedCronJob, scheduled string, cond batchv1.JobConditionType) *batchv1.Job {
	ts, _ := time.Parse(time.RFC3339, scheduled)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name: childName(acj, ts), Namespace: testNS, UID: types.UID("uid-" + scheduled),
		CreationTimestamp: metav1.NewTime(ts),
		Annotations:       map[string]string{pub.AdvancedCronJobScheduledAtAnnotation: scheduled},
		OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(acj, appsv1alpha1.SchemeGroupVersion.WithKind("AdvancedCronJob"))},
	}}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
	}
	return j
}

func unix(t *testing.T, s string) int64 { return mustTime(t, s).Unix() }

func TestSyncCreatesTheDueJob(t *testing.T) {
	acj := newACJ("2026-03-01T10:00:10Z")
	f := newFixture(t, "2026-03-01T10:01:05Z", acj)
	f.sync()

	name := fmt.Sprintf("acj-%d", unix(t, "2026-03-01T10:01:00Z"))
	assert.Equal(t, []string{"create jobs " + name, "patch advancedcronjobs/status acj"}, f.Writes())
	j, err := f.Kube.BatchV1().Jobs(testNS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2026-03-01T10:01:00Z", j.Annotations[pub.AdvancedCronJobScheduledAtAnnotation])
	assert.Equal(t, "x", j.Annotations["note"])
	assert.Equal(t, map[string]string{"app": "demo"}, j.Labels)
	ref := metav1.GetControllerOf(j)
	require.NotNil(t, ref)
	assert.Equal(t, types.UID("acj-uid"), ref.UID)
	assert.Equal(t, "AdvancedCronJob", ref.Kind)
	assert.True(t, ptr.Deref(ref.BlockOwnerDeletion, false))
	assert.Equal(t, "busybox", j.Spec.Template.Spec.Containers[0].Image)

	st := f.status()
	assert.Equal(t, appsv1alpha1.JobTemplate, st.Type)
	require.Len(t, st.Active, 1)
	assert.Equal(t, corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: testNS, Name: name}, st.Active[0])
	assert.Equal(t, "2026-03-01T10:01:00Z", st.LastScheduleTime.UTC().Format(time.RFC3339))
	assert.Equal(t, []string{"Normal SuccessfulCreate Created Job " + name}, f.Events())

	// The template in the cache is untouched.
	assert.Empty(t, acj.Spec.Template.JobTemplate.Annotations[pub.AdvancedCronJobScheduledAtAnnotation])
	// Requeued for 10:02, not before.
	assert.False(t, f.queuedBy("2026-03-01T10:01:59Z"))
	assert.True(t, f.queuedBy("2026-03-01T10:02:00Z"))
}

func TestSyncNothingDue(t *testing.T) {
	f := newFixture(t, "2026-03-01T10:00:30Z", newACJ("2026-03-01T10:00:10Z"))
	f.sync()
	assert.Equal(t, []string{"patch advancedcronjobs/status acj"}, f.Writes(), "only status.type is written")
	assert.Nil(t, f.status().LastScheduleTime)
	assert.True(t, f.queuedBy("2026-03-01T10:01:00Z"))
}

func TestSyncConcurrencyPolicy(t *testing.T) {
	next := fmt.Sprintf("acj-%d", unix(t, "2026-03-01T10:02:00Z"))
	prev := fmt.Sprintf("acj-%d", unix(t, "2026-03-01T10:01:00Z"))
	cases := []struct {
		policy appsv1alpha1.ConcurrencyPolicy
		want   []string
	}{
		{appsv1alpha1.AllowConcurrent, []string{"create jobs " + next, "patch advancedcronjobs/status acj"}},
		{appsv1alpha1.ForbidConcurrent, nil}, // and a JobAlreadyActive event
		{appsv1alpha1.ReplaceConcurrent, []string{"delete jobs " + prev, "create jobs " + next, "patch advancedcronjobs/status acj"}},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy), func(t *testing.T) {
			acj := newACJ("2026-03-01T10:00:10Z", func(a *appsv1alpha1.AdvancedCronJob) {
				a.Spec.ConcurrencyPolicy = tc.policy
				a.Status = appsv1alpha1.AdvancedCronJobStatus{Type: appsv1alpha1.JobTemplate,
					LastScheduleTime: ptr.To(metav1.NewTime(mustTime(t, "2026-03-01T10:01:00Z"))),
					Active: []corev1.ObjectReference{{Kind: "Job", APIVersion: "batch/v1", Namespace: testNS, Name: prev,
						UID: "uid-2026-03-01T10:01:00Z"}}}
				// Already reported usable, so a sync that changes nothing else writes nothing.
				a.Status.Conditions = scheduleCondition(a, nil, mustTime(t, "2026-03-01T10:00:10Z"))
			})
			f := newFixture(t, "2026-03-01T10:02:01Z", acj, job(acj, "2026-03-01T10:01:00Z", ""))
			f.sync()
			assert.Equal(t, tc.want, f.Writes())
		})
	}
}

// Unlike OpenKruise (which starts nothing, and so never again), more than 100 missed start times are a Warning and
// the most recent one still runs, as in the upstream CronJob controller; the key is queued for the next start time.
func TestSyncTooManyMissedStartsTheMostRecent(t *testing.T) {
	f := newFixture(t, "2026-03-01T13:00:30Z", newACJ("2026-03-01T10:00:10Z"))
	f.sync()
	assert.Equal(t, []string{fmt.Sprintf("create jobs acj-%d", unix(t, "2026-03-01T13:00:00Z")),
		"patch advancedcronjobs/status acj"}, f.Writes())
	ev := f.Events()
	require.NotEmpty(t, ev)
	assert.True(t, strings.HasPrefix(ev[0], "Warning TooManyMissedTimes More than 100 start times missed"), ev[0])
	assert.Contains(t, ev[0], "only the most recent, 2026-03-01T13:00:00Z")
	require.NotNil(t, f.status().LastScheduleTime)
	assert.Equal(t, mustTime(t, "2026-03-01T13:00:00Z"), f.status().LastScheduleTime.Time.UTC())
	assert.False(t, f.queuedBy("2026-03-01T13:00:59Z"), "no retry before the next start time")
	assert.True(t, f.queuedBy("2026-03-01T13:01:00Z"), "queued for the next start time")
}

func TestSyncStartingDeadline(t *testing.T) {
	acj := newACJ("2026-03-01T10:00:10Z", func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.StartingDeadlineSeconds = ptr.To[int64](10) })
	f := newFixture(t, "2026-03-01T10:01:30Z", acj)
	f.sync()
	assert.Equal(t, []string{"patch advancedcronjobs/status acj"}, f.Writes(), "the 10:01 run is 30s late: skipped")
	ev := f.Events()
	require.Len(t, ev, 1)
	assert.True(t, strings.HasPrefix(ev[0], "Warning MissSchedule"), ev[0])

	f = newFixture(t, "2026-03-01T10:01:09Z", newACJ("2026-03-01T10:00:10Z", func(a *appsv1alpha1.AdvancedCronJob) {
		a.Spec.StartingDeadlineSeconds = ptr.To[int64](10)
	}))
	f.sync()
	assert.Contains(t, f.Writes(), fmt.Sprintf("create jobs acj-%d", unix(t, "2026-03-01T10:01:00Z")), "9s late: still runs")
}

func TestSyncPaused(t *testing.T) {
	f := newFixture(t, "2026-03-01T10:05:00Z", newACJ("2026-03-01T10:00:10Z", func(a *appsv1alpha1.AdvancedCronJob) {
		a.Spec.Paused = ptr.To(true)
	}))
	f.sync()
	assert.Equal(t, []string{"patch advancedcronjobs/status acj"}, f.Writes())
	assert.False(t, f.queuedBy("2026-03-01T11:00:00Z"), "a paused AdvancedCronJob is not requeued")
}

func TestSyncUnusableSpecWarnsOnce(t *testing.T) {
	cases := map[string]func(*appsv1alpha1.AdvancedCronJob){
		"UnknownTimeZone": func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.TimeZone = ptr.To("Mars/Olympus") },
		"InvalidSchedule": func(a *appsv1alpha1.AdvancedCronJob) { a.Spec.Schedule = "61 * * * *" },
	}
	for reason, mutate := range cases {
		t.Run(reason, func(t *testing.T) {
			f := newFixture(t, "2026-03-01T10:05:00Z", newACJ("2026-03-01T10:00:10Z", mutate))
			assert.True(t, controller.IsPermanent(f.sync()), "returned as permanent: logged, not retried")
			assert.Equal(t, []string{"patch advancedcronjobs/status acj"}, f.Writes(), "no child")
			ev := f.Events()
			require.Len(t, ev, 1)
			assert.True(t, strings.HasPrefix(ev[0], "Warning "+reason), ev[0])
			assert.False(t, f.queuedBy("2026-03-02T10:00:00Z"), "no retry, no requeue: only a spec change helps")
		})
	}
}

// A controller that lost the status (a crash between create and status write, or a restart) derives the last
// scheduled time from the children's annotation and does not run the slot again.
func TestSyncDerivesLastScheduleFromChildren(t *testing.T) {
	acj := newACJ("2026-03-01T10:00:10Z")
	f := newFixture(t, "2026-03-01T10:01:40Z", acj, job(acj, "2026-03-01T10:01:00Z", batchv1.JobComplete))
	f.sync()
	assert.Equal(t, []string{"patch advancedcronjobs/status acj"}, f.Writes())
	assert.Equal(t, "2026-03-01T10:01:00Z", f.status().LastScheduleTime.UTC().Format(time.RFC3339))
	assert.Empty(t, f.status().Active)
}

// The cache may not show a child this controller just created; the API server's AlreadyExists for the per-slot
// name means no duplicate.
func TestSyncAlreadyExistsIsNotADuplicate(t *testing.T) {
	acj := newACJ("2026-03-01T10:00:10Z")
	f := newFixture(t, "2026-03-01T10:01:05Z", acj)
	_, err := f.Kube.BatchV1().Jobs(testNS).Create(context.Background(), job(acj, "2026-03-01T10:01:00Z", ""), metav1.CreateOptions{})
	require.NoError(t, err)
	f.Kube.ClearActions()
	f.sync()
	jobs, err := f.Kube.BatchV1().Jobs(testNS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, jobs.Items, 1)
	assert.Equal(t, "2026-03-01T10:01:00Z", f.status().LastScheduleTime.UTC().Format(time.RFC3339))
	f.Clear()
	f.sync() // the cache still lacks the child: the remembered slot keeps it from being tried again
	assert.NotContains(t, strings.Join(f.Writes(), ","), "create")
}

func TestSyncHistoryLimits(t *testing.T) {
	acj := newACJ("2026-03-01T10:00:10Z", func(a *appsv1alpha1.AdvancedCronJob) {
		a.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](2)
		a.Spec.FailedJobsHistoryLimit = ptr.To[int32](1)
		a.Status.LastScheduleTime = ptr.To(metav1.NewTime(mustTime(t, "2026-03-01T10:06:00Z")))
	})
	kids := []runtime.Object{
		job(acj, "2026-03-01T10:01:00Z", batchv1.JobComplete),
		job(acj, "2026-03-01T10:02:00Z", batchv1.JobFailed),
		job(acj, "2026-03-01T10:03:00Z", batchv1.JobComplete),
		job(acj, "2026-03-01T10:04:00Z", batchv1.JobFailed),
		job(acj, "2026-03-01T10:05:00Z", batchv1.JobComplete),
		job(acj, "2026-03-01T10:06:00Z", ""),
	}
	f := newFixture(t, "2026-03-01T10:06:30Z", acj, kids...)
	f.sync()
	n := func(s string) string { return fmt.Sprintf("acj-%d", unix(t, s)) }
	assert.Equal(t, []string{
		"delete jobs " + n("2026-03-01T10:01:00Z"),
		"delete jobs " + n("2026-03-01T10:02:00Z"),
		"patch advancedcronjobs/status acj",
	}, f.Writes())
}

func TestSyncBroadcastJobTemplate(t *testing.T) {
	acj := newACJ("2026-03-01T10:00:10Z", func(a *appsv1alpha1.AdvancedCronJob) {
		a.Spec.Template = appsv1alpha1.CronJobTemplate{BroadcastJobTemplate: &appsv1alpha1.BroadcastJobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bcj"}},
			Spec: appsv1alpha1.BroadcastJobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}},
		}}
	})
	f := newFixture(t, "2026-03-01T10:01:05Z", acj)
	f.sync()
	name := fmt.Sprintf("acj-%d", unix(t, "2026-03-01T10:01:00Z"))
	assert.Equal(t, []string{"create broadcastjobs " + name, "patch advancedcronjobs/status acj"}, f.Writes())
	st := f.status()
	assert.Equal(t, appsv1alpha1.BroadcastJobTemplate, st.Type)
	require.Len(t, st.Active, 1)
	assert.Equal(t, "BroadcastJob", st.Active[0].Kind)
	assert.Equal(t, "apps.kruise.io/v1alpha1", st.Active[0].APIVersion)
}

// The status patch clears fields with explicit nulls and carries nothing else.
func TestStatusPatchShape(t *testing.T) {
	var p statusPatch
	p.Status.Type = appsv1alpha1.JobTemplate
	b, err := json.Marshal(p)
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":{"type":"Job","active":null,"lastScheduleTime":null,"conditions":null}}`, string(b))
}

// A child the API server rejects (e.g. a name too long for a Job) is reported and not retried in a loop; the slot
// is not recorded as run.
func TestSyncRejectedChildIsNotRetried(t *testing.T) {
	f := newFixture(t, "2026-03-01T10:01:05Z", newACJ("2026-03-01T10:00:10Z"))
	f.Kube.PrependReactor("create", "jobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(batchv1.SchemeGroupVersion.WithKind("Job").GroupKind(), "x", nil)
	})
	assert.True(t, controller.IsPermanent(f.sync()), "a retry cannot help")
	ev := f.Events()
	require.Len(t, ev, 1)
	assert.True(t, strings.HasPrefix(ev[0], "Warning FailedCreate"), ev[0])
	assert.Nil(t, f.status().LastScheduleTime)
	assert.True(t, f.queuedBy("2026-03-01T10:02:00Z"), "the next start time tries again")
}
