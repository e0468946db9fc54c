package broadcastjob

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// okBroadcastPod mirrors broadcastjob_controller.go createPod as OpenKruise
// v1.9 runs it: Kubernetes' GetPodFromTemplate (generateName <job>-, the
// template's labels — addLabelToPodTemplate has added broadcastjob-name and
// broadcastjob-controller-uid — annotations and finalizers, the
// controllerRef to the apps.kruise.io/v1beta1 BroadcastJob) and, with
// scheduleBroadcastJobPods, ReplaceDaemonSetPodNodeNameNodeAffinity (a
// required affinity on the node's metadata.name).
func okBroadcastPod(job *appsv1alpha1.BroadcastJob, node string, extraAnnotations map[string]string) *corev1.Pod {
	tmpl := job.Spec.Template.DeepCopy()
	lbls := map[string]string{LabelJobName: job.Name, LabelJobUID: string(job.UID)}
	for k, v := range tmpl.Labels {
		lbls[k] = v
	}
	ann := map[string]string{}
	for k, v := range tmpl.Annotations {
		ann[k] = v
	}
	for k, v := range extraAnnotations {
		ann[k] = v
	}
	spec := tmpl.Spec
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: job.Name + "-", Namespace: job.Namespace, Labels: lbls, Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "BroadcastJob", Name: job.Name, UID: job.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: spec,
	}
}

// TestIntegrationTakeoverFromOpenKruise (issue 23): a BroadcastJob half done
// under OpenKruise v1.9 — stored with SetDefaultsBroadcastJob's defaults, one
// pod per node created by createPod (one succeeded, one running), its status
// as the reconcile last wrote it — then Flotilla's controller starts. No pod
// is created, deleted or written (nothing is re-run on the node that
// already ran it), the counters stay OpenKruise's, and the job completes
// when the running pod does.
func TestIntegrationTakeoverFromOpenKruise(t *testing.T) {
	it := newITest(t)
	nodes := it.addNodes(2, nil)
	ctx := context.Background()
	job := it.create(it.newJob("okbj", func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.CompletionPolicy.Type = appsv1alpha1.Always
		j.Spec.Parallelism = ptr.To(intstr.FromInt32(1<<31 - 1))
		j.Spec.FailurePolicy.Type = appsv1alpha1.FailurePolicyTypeFailFast
	}))
	done := it.podAPI.Create(okBroadcastPod(job, nodes[0], map[string]string{lab.KwokComplete: string(corev1.PodSucceeded)}))
	running := it.podAPI.Create(okBroadcastPod(job, nodes[1], nil))
	it.podAPI.WaitFor(done.Name, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	it.podAPI.WaitFor(running.Name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	_, err := it.Client.AppsV1alpha1().BroadcastJobs(it.NS).UpdateStatus(ctx, &appsv1alpha1.BroadcastJob{
		ObjectMeta: job.ObjectMeta,
		Status: appsv1alpha1.BroadcastJobStatus{StartTime: &started, Active: 1, Succeeded: 1, Desired: 2,
			Phase: appsv1alpha1.PhaseRunning},
	}, metav1.UpdateOptions{})
	require.NoError(t, err)
	writes := testenv.WatchPodWrites(t, it.Env.Kube, it.NS)

	it.startController()
	// OpenKruise's counters are what Flotilla computes: no write needed;
	// give the controller time to act on its initial list.
	testenv.Consistently(t, 5*time.Second, func() error { return writes.Untouched(0) })
	got, err := it.job(job.Name)
	require.NoError(t, err)
	assert.True(t, counters(2, 1, 1, 0)(got.Status), "%+v", got.Status)
	assert.Equal(t, appsv1alpha1.PhaseRunning, got.Status.Phase)
	assert.True(t, got.Status.StartTime.Equal(&started), "startTime kept (the active deadline counts from it)")
	assert.Len(t, it.pods(job.Name), 2, "no pod re-run")

	it.CompletePod(running.Name, corev1.PodSucceeded)
	finished := it.waitStatus(job.Name, func(s appsv1alpha1.BroadcastJobStatus) bool {
		return hasCondition(s, appsv1alpha1.JobComplete, ReasonCompleted)
	})
	assert.True(t, counters(2, 0, 2, 0)(finished.Status), "%+v", finished.Status)
	assert.Len(t, it.pods(job.Name), 2, "exactly one pod per node")
	counts, err := writes.Counts()
	require.NoError(t, err)
	for name, c := range counts {
		assert.Zero(t, c.Created+c.Deleted+c.Spec, "pod %s: %+v", name, c)
	}
}
