// Package cronjob tests the built cronjob-controller binary end to end: started as a process under the
// ServiceAccount and RBAC deploy/ installs, restricted to the test's namespace. The AdvancedCronJob test runs a
// build with the e2eclock tag, whose --clock-offset (absent from release builds) puts the next minute boundary a
// few seconds away so an every-minute AdvancedCronJob runs without waiting for the wall clock.
package cronjob

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestEveryMinuteAdvancedCronJobRunsAJob(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	bin := framework.Binary(t, env, "cronjob", "e2eclock") // built before the clock offset below is computed
	client := versioned.NewForConfigOrDie(env.Config)
	ctx := context.Background()

	// In the controller's time it is 5s before a minute boundary that lies 70-130s ahead of real time, so the
	// AdvancedCronJob created below is older than that boundary whatever the timing.
	start := time.Now()
	boundary := start.Add(70 * time.Second).Truncate(time.Minute).Add(time.Minute)
	offset := boundary.Add(-5 * time.Second).Sub(start)
	p := framework.StartScopedBinary(t, env, bin, "cronjob", ns, "--enable-broadcastjob=false",
		fmt.Sprintf("--clock-offset=%s", offset.Round(time.Millisecond)))

	acj, err := client.AppsV1alpha1().AdvancedCronJobs(ns).Create(ctx, &appsv1alpha1.AdvancedCronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "every-minute"},
		Spec: appsv1alpha1.AdvancedCronJobSpec{
			Schedule: "*/1 * * * *",
			Template: appsv1alpha1.CronJobTemplate{JobTemplate: &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"date"}}},
				}},
			}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, acj.CreationTimestamp.Before(&metav1.Time{Time: boundary}))

	// The Job of the boundary's run appears, owned by the AdvancedCronJob, and completes (kwok runs its pod).
	jobName := fmt.Sprintf("%s-%d", acj.Name, boundary.Unix())
	var job *batchv1.Job
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		job, err = env.Kube.BatchV1().Jobs(ns).Get(ctx, jobName, metav1.GetOptions{})
		return err == nil, nil
	})
	require.NotNil(t, metav1.GetControllerOf(job))
	assert.Equal(t, acj.UID, metav1.GetControllerOf(job).UID)
	assert.Equal(t, boundary.UTC().Format(time.RFC3339), job.Annotations["apps.kruise.io/scheduled-at"])
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, jobName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})

	// The status follows: the kind of children, the run's time, and no active child once it completed.
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		got, err := client.AppsV1alpha1().AdvancedCronJobs(ns).Get(ctx, acj.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		return st.Type == appsv1alpha1.JobTemplate && len(st.Active) == 0 &&
			st.LastScheduleTime != nil && st.LastScheduleTime.Equal(&metav1.Time{Time: boundary}), nil
	})
	events, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + acj.Name + ",reason=SuccessfulCreate"})
	require.NoError(t, err)
	assert.NotEmpty(t, events.Items, "a SuccessfulCreate event is recorded under the controller's identity")
	require.True(t, p.Running(), "cronjob-controller exited")
}
