// Package integration runs the real AdvancedCronJob reconciler in-process against the local control plane
// (kit/testenv), one namespace per test, with a fake clock stepped across schedule boundaries so no test waits
// for a wall-clock minute.
package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/cronjob/internal/advancedcronjob"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// waitTimeout bounds every poll: a Job needs the scheduler, kwok and kube-controller-manager to finish.
const waitTimeout = 60 * time.Second

type harness struct {
	*lab.Lab
	acjs   *testenv.Objects[*appsv1alpha1.AdvancedCronJob]
	jobAPI *testenv.Objects[*batchv1.Job]
	// clock is the reconciler's "now" and drives its queue's delays. It starts an hour in the past, before any
	// object of the test exists, so nothing is due until the test moves it to a start time.
	clock *clocktesting.FakeClock
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout), clock: clocktesting.NewFakeClock(time.Now().Add(-time.Hour))}
	h.acjs = testenv.ObjectsOf(t, h.Client.AppsV1alpha1().AdvancedCronJobs(h.NS), waitTimeout)
	h.acjs.Describe = func(acj *appsv1alpha1.AdvancedCronJob) string {
		b, _ := json.Marshal(acj.Status)
		return string(b)
	}
	h.jobAPI = testenv.ObjectsOf(t, h.Env.Kube.BatchV1().Jobs(h.NS), waitTimeout)
	return h
}

// startController runs a reconciler over informers limited to the test's namespace (keeping managedFields),
// on the test's clock; the returned function stops it and waits until it has (also done at cleanup).
func (h *harness) startController() (stop func()) {
	h.T.Helper()
	d := h.Deps("advancedcronjob-test", nil)
	d.KubeInformers = informers.NewSharedInformerFactoryWithOptions(h.Env.Kube, 0, informers.WithNamespace(h.NS))
	d.Namespace = ""
	d.Clock = h.clock
	d.QueueConfig = controller.QueueConfig{Clock: h.clock}
	c, err := advancedcronjob.New(d)
	require.NoError(h.T, err)
	return h.Start(c, 2, d)
}

// stepTo moves the reconciler's clock; the queue's timers due by then fire.
func (h *harness) stepTo(ts time.Time) { h.clock.SetTime(ts) }

// newACJ builds an every-minute AdvancedCronJob whose Jobs run one pod of busybox; mutate adjusts it.
func newACJ(name string, mutate ...func(*appsv1alpha1.AdvancedCronJob)) *appsv1alpha1.AdvancedCronJob {
	acj := &appsv1alpha1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.AdvancedCronJobSpec{
			Schedule: "* * * * *",
			Template: appsv1alpha1.CronJobTemplate{JobTemplate: &batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Annotations: map[string]string{"team": "batch"}},
				Spec: batchv1.JobSpec{
					BackoffLimit: ptr.To[int32](0),
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
						Spec: corev1.PodSpec{
							RestartPolicy: corev1.RestartPolicyNever,
							Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
						},
					},
				},
			}},
		},
	}
	for _, m := range mutate {
		m(acj)
	}
	return acj
}

// longRunning keeps the Jobs' pods Running until the test finishes them.
func longRunning(acj *appsv1alpha1.AdvancedCronJob) {
	acj.Spec.Template.JobTemplate.Spec.Template.Annotations = map[string]string{lab.KwokComplete: "Never"}
}

// create and get go to the API server (kit/testenv.Objects).
func (h *harness) create(acj *appsv1alpha1.AdvancedCronJob) *appsv1alpha1.AdvancedCronJob {
	h.T.Helper()
	return h.acjs.Create(acj)
}

func (h *harness) get(name string) *appsv1alpha1.AdvancedCronJob {
	h.T.Helper()
	return h.acjs.Get(name)
}

// nextMinute is the first every-minute start time after the object's creation.
func nextMinute(acj *appsv1alpha1.AdvancedCronJob) time.Time {
	return acj.CreationTimestamp.Truncate(time.Minute).Add(time.Minute)
}

func childName(acj *appsv1alpha1.AdvancedCronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", acj.Name, scheduled.Unix())
}

// jobs returns the Jobs controlled by acj, by name, straight from the API server.
func (h *harness) jobs(acj *appsv1alpha1.AdvancedCronJob) map[string]batchv1.Job {
	h.T.Helper()
	list, err := h.Env.Kube.BatchV1().Jobs(h.NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(h.T, err)
	out := map[string]batchv1.Job{}
	for _, j := range list.Items {
		if ref := metav1.GetControllerOf(&j); ref != nil && ref.UID == acj.UID {
			out[j.Name] = j
		}
	}
	return out
}

// liveJobNames is jobs() without the ones being deleted, sorted into a set of names.
func (h *harness) liveJobNames(acj *appsv1alpha1.AdvancedCronJob) map[string]bool {
	out := map[string]bool{}
	for n, j := range h.jobs(acj) {
		if j.DeletionTimestamp == nil {
			out[n] = true
		}
	}
	return out
}

// waitJob waits for the Job to exist.
func (h *harness) waitJob(name string) batchv1.Job {
	h.T.Helper()
	return *h.jobAPI.WaitFor(name, "exists", func(*batchv1.Job) bool { return true })
}

// waitStatus polls the AdvancedCronJob until cond holds for its status.
func (h *harness) waitStatus(name string, what string, cond func(appsv1alpha1.AdvancedCronJobStatus) bool) appsv1alpha1.AdvancedCronJobStatus {
	h.T.Helper()
	return h.acjs.WaitFor(name, what, func(acj *appsv1alpha1.AdvancedCronJob) bool { return cond(acj.Status) }).Status
}

// scheduledAt says the status records ts as the last scheduled time. Waiting for it before the next step of
// the clock also guarantees that the sync which started that run has queued the key for the next start time.
func scheduledAt(ts time.Time) func(appsv1alpha1.AdvancedCronJobStatus) bool {
	return func(st appsv1alpha1.AdvancedCronJobStatus) bool {
		return st.LastScheduleTime != nil && st.LastScheduleTime.Equal(&metav1.Time{Time: ts})
	}
}

func activeNames(st appsv1alpha1.AdvancedCronJobStatus) []string {
	var out []string
	for _, a := range st.Active {
		out = append(out, a.Name)
	}
	return out
}

// finishJob has kwok finish the Job's pods in phase (waiting for them to exist).
func (h *harness) finishJob(jobName string, phase corev1.PodPhase) {
	h.T.Helper()
	pods := h.WaitPods(func() []corev1.Pod { return h.ListPods("batch.kubernetes.io/job-name=" + jobName) }, "pods of Job "+jobName,
		func(pods []corev1.Pod) bool { return len(pods) > 0 })
	for _, p := range pods {
		h.CompletePod(p.Name, phase)
	}
}

// waitJobFinished waits for the Job's Complete or Failed condition.
func (h *harness) waitJobFinished(name string) {
	h.T.Helper()
	h.jobAPI.WaitFor(name, "Complete or Failed", func(j *batchv1.Job) bool {
		for _, c := range j.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

// eventCount is the number of times (aggregated counts included) the reason was recorded for the object.
func (h *harness) eventCount(name, reason string) (int, []corev1.Event) {
	h.T.Helper()
	var evs []corev1.Event
	n := 0
	for _, e := range h.Events(name) {
		if e.Reason == reason {
			evs = append(evs, e)
			n += int(max(e.Count, 1))
		}
	}
	return n, evs
}
