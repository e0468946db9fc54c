package broadcastjob

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func succeedOnRun(j *appsv1alpha1.BroadcastJob) {
	j.Spec.Template.Annotations = map[string]string{lab.KwokComplete: string(corev1.PodSucceeded)}
}

func failurePolicy(t appsv1alpha1.FailurePolicyType, restartLimit int32) func(*appsv1alpha1.BroadcastJob) {
	return func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.FailurePolicy = appsv1alpha1.FailurePolicy{Type: t, RestartLimit: restartLimit}
	}
}

// Item 6: one pod per eligible node (nodeSelector, required affinity, taints/tolerations), placed by the
// scheduler; counters while running; completionPolicy Always completes once every pod succeeded.
func TestIntegrationOnePodPerEligibleNode(t *testing.T) {
	it := newITest(t)
	plain := it.addNodes(2, map[string]string{"role": "bcj"})
	dedicated := corev1.Taint{Key: "flotilla.dev/dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}
	tainted := it.addNodes(1, map[string]string{"role": "bcj"}, dedicated)
	it.addNodes(1, map[string]string{"role": "other"})
	it.startController()

	// nodeSelector: the tainted node is excluded (not tolerated), the "other" node is not selected.
	bySelector := it.create(it.newJob("by-selector", func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.Template.Spec.NodeSelector["role"] = "bcj"
	}))
	// Required affinity plus a toleration of the extra taint: three nodes.
	byAffinity := it.create(it.newJob("by-affinity", func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "role", Operator: corev1.NodeSelectorOpIn, Values: []string{"bcj"}}},
			}}}}}
		j.Spec.Template.Spec.Tolerations = append(j.Spec.Template.Spec.Tolerations,
			corev1.Toleration{Key: dedicated.Key, Operator: corev1.TolerationOpEqual, Value: dedicated.Value, Effect: corev1.TaintEffectNoSchedule})
	}))

	for _, tc := range []struct {
		job   *appsv1alpha1.BroadcastJob
		nodes []string
	}{{bySelector, plain}, {byAffinity, append(append([]string(nil), plain...), tainted...)}} {
		running := it.waitRunning(tc.job.Name, len(tc.nodes))
		var bound []string
		for _, p := range running {
			assert.Equal(t, nodeplacement.TargetNode(&p), p.Spec.NodeName, "the scheduler bound %s where the affinity pins it", p.Name)
			assert.Equal(t, string(tc.job.UID), p.Labels[LabelJobUID])
			assert.True(t, metav1.IsControlledBy(&p, tc.job))
			bound = append(bound, p.Spec.NodeName)
		}
		assert.ElementsMatch(t, tc.nodes, bound, tc.job.Name)
		n := int32(len(tc.nodes))
		job := it.waitStatus(tc.job.Name, counters(n, n, 0, 0))
		assert.Equal(t, appsv1alpha1.PhaseRunning, job.Status.Phase)
		assert.NotNil(t, job.Status.StartTime)
		assert.Empty(t, job.Status.Conditions)

		for i, p := range running {
			it.CompletePod(p.Name, corev1.PodSucceeded)
			if i == 0 {
				it.waitStatus(tc.job.Name, counters(n, n-1, 1, 0))
			}
		}
		job = it.waitStatus(tc.job.Name, func(s appsv1alpha1.BroadcastJobStatus) bool {
			return hasCondition(s, appsv1alpha1.JobComplete, ReasonCompleted)
		})
		assert.True(t, counters(n, 0, n, 0)(job.Status), "%+v", job.Status)
		assert.Equal(t, appsv1alpha1.PhaseCompleted, job.Status.Phase)
		require.NotNil(t, job.Status.CompletionTime)
		assert.False(t, job.Status.CompletionTime.Before(job.Status.StartTime))
		assert.Len(t, it.pods(tc.job.Name), len(tc.nodes), "exactly one pod per node")
	}
}

// Item 6: parallelism caps the active pods; the next node gets its pod when one finishes.
func TestIntegrationParallelism(t *testing.T) {
	it := newITest(t)
	it.addNodes(3, nil)
	it.startController()
	it.create(it.newJob("par", func(j *appsv1alpha1.BroadcastJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(1)) }))

	seen := map[string]bool{}
	for step := int32(0); step < 3; step++ {
		it.waitStatus("par", func(s appsv1alpha1.BroadcastJobStatus) bool { return s.Succeeded == step })
		running := it.waitRunning("par", 1)
		it.waitStatus("par", counters(3, 1, step, 0))
		pods := it.pods("par")
		assert.Len(t, pods, int(step)+1, "never more than one pod beyond those finished")
		node := nodeplacement.TargetNode(&running[0])
		assert.False(t, seen[node], "node %s ran twice", node)
		seen[node] = true
		it.CompletePod(running[0].Name, corev1.PodSucceeded)
	}
	job := it.waitStatus("par", func(s appsv1alpha1.BroadcastJobStatus) bool { return s.Phase == appsv1alpha1.PhaseCompleted })
	assert.True(t, counters(3, 0, 3, 0)(job.Status), "%+v", job.Status)
}

// Item 6: completionPolicy Never keeps running after every pod finished and follows a node that joins.
func TestIntegrationNeverFollowsNewNodes(t *testing.T) {
	it := newITest(t)
	it.addNodes(1, nil)
	it.startController()
	it.create(it.newJob("never", succeedOnRun, func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.CompletionPolicy = appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Never,
			ActiveDeadlineSeconds: ptr.To[int64](1), TTLSecondsAfterFinished: ptr.To[int32](0)} // both ignored
	}))
	job := it.waitStatus("never", counters(1, 0, 1, 0))
	assert.Equal(t, appsv1alpha1.PhaseRunning, job.Status.Phase)
	assert.Empty(t, job.Status.Conditions)

	added := it.addNodes(1, nil)
	job = it.waitStatus("never", counters(2, 0, 2, 0))
	assert.Equal(t, appsv1alpha1.PhaseRunning, job.Status.Phase)
	assert.Empty(t, job.Status.Conditions, "still running past activeDeadlineSeconds")
	assert.Len(t, podsByNode(it.pods("never"))[added[0]], 1, "the new node got one pod")
}

// Item 6: activeDeadlineSeconds fails the job (DeadlineExceeded) and deletes its active pods.
func TestIntegrationActiveDeadline(t *testing.T) {
	it := newITest(t)
	it.addNodes(2, nil)
	it.startController()
	it.create(it.newJob("deadline", func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](3)
	}))
	it.waitRunning("deadline", 2)
	job := it.waitStatus("deadline", func(s appsv1alpha1.BroadcastJobStatus) bool {
		return hasCondition(s, appsv1alpha1.JobFailed, ReasonDeadlineExceeded) && s.Active == 0
	})
	assert.Equal(t, appsv1alpha1.PhaseFailed, job.Status.Phase)
	assert.NotNil(t, job.Status.CompletionTime)
	assert.GreaterOrEqual(t, job.Status.CompletionTime.Sub(job.Status.StartTime.Time), 3*time.Second)
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(it.pods("deadline")) == 0, nil })
}

// Item 6: ttlSecondsAfterFinished deletes the finished job, and the garbage collector its pods.
func TestIntegrationTTLAfterFinished(t *testing.T) {
	it := newITest(t)
	it.addNodes(1, nil)
	it.startController()
	created := it.create(it.newJob("ttl", succeedOnRun, func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](2)
	}))
	job := it.waitStatus("ttl", func(s appsv1alpha1.BroadcastJobStatus) bool { return s.Phase == appsv1alpha1.PhaseCompleted })
	assert.Equal(t, created.UID, job.UID)
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		_, err := it.job("ttl")
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	finishedAt := job.Status.CompletionTime.Time
	assert.GreaterOrEqual(t, time.Since(finishedAt), 2*time.Second-time.Second /* second-precision timestamps */)
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(it.pods("ttl")) == 0, nil })
}

// Item 6: failurePolicy Continue / FailFast (Pause: TestIntegrationPauseHoldsWithoutWritingSpec).
func TestIntegrationFailurePolicies(t *testing.T) {
	t.Run("Continue completes despite a failed node", func(t *testing.T) {
		it := newITest(t)
		it.addNodes(2, nil)
		it.startController()
		it.create(it.newJob("cont", failurePolicy(appsv1alpha1.FailurePolicyTypeContinue, 0)))
		running := it.waitRunning("cont", 2)
		it.CompletePod(running[0].Name, corev1.PodFailed)
		it.waitStatus("cont", counters(2, 1, 0, 1))
		it.CompletePod(running[1].Name, corev1.PodSucceeded)
		job := it.waitStatus("cont", func(s appsv1alpha1.BroadcastJobStatus) bool {
			return hasCondition(s, appsv1alpha1.JobComplete, ReasonCompleted)
		})
		assert.True(t, counters(2, 0, 1, 1)(job.Status), "%+v", job.Status)
		assert.Len(t, it.pods("cont"), 2, "restartLimit 0: no retry")
	})

	t.Run("FailFast fails the job and deletes the active pods", func(t *testing.T) {
		it := newITest(t)
		it.addNodes(3, nil)
		it.startController()
		it.create(it.newJob("ff", failurePolicy(appsv1alpha1.FailurePolicyTypeFailFast, 0)))
		running := it.waitRunning("ff", 3)
		it.CompletePod(running[0].Name, corev1.PodFailed)
		job := it.waitStatus("ff", func(s appsv1alpha1.BroadcastJobStatus) bool {
			return hasCondition(s, appsv1alpha1.JobFailed, ReasonFailFast) && s.Active == 0
		})
		assert.Equal(t, appsv1alpha1.PhaseFailed, job.Status.Phase)
		assert.Equal(t, int32(1), job.Status.Failed)
		testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(it.pods("ff")) == 1, nil })
		assert.Equal(t, corev1.PodFailed, it.pods("ff")[0].Status.Phase, "only the failed pod is left as a record")
	})
}

// Item 6: paused stops creating pods; unpausing resumes.
func TestIntegrationPausedStopsCreating(t *testing.T) {
	it := newITest(t)
	it.addNodes(2, nil)
	it.startController()
	it.create(it.newJob("paused", succeedOnRun, func(j *appsv1alpha1.BroadcastJob) { j.Spec.Paused = true }))
	job := it.waitStatus("paused", func(s appsv1alpha1.BroadcastJobStatus) bool {
		return s.Phase == appsv1alpha1.PhasePaused && counters(2, 0, 0, 0)(s)
	})
	assert.Empty(t, it.pods("paused"))
	assert.Empty(t, job.Status.Conditions)

	_, err := it.Client.AppsV1alpha1().BroadcastJobs(it.NS).Patch(context.Background(), "paused", types.MergePatchType,
		[]byte(`{"spec":{"paused":false}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	job = it.waitStatus("paused", func(s appsv1alpha1.BroadcastJobStatus) bool { return s.Phase == appsv1alpha1.PhaseCompleted })
	assert.True(t, counters(2, 0, 2, 0)(job.Status), "%+v", job.Status)
}

// Restart safety: restarting the reconciler mid-run (fresh caches, no expectations) never puts a second pod on a
// node.
func TestIntegrationRestartCreatesNoDuplicates(t *testing.T) {
	it := newITest(t)
	nodes := it.addNodes(4, nil)
	stop := it.startController()
	it.create(it.newJob("restart", func(j *appsv1alpha1.BroadcastJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(2)) }))
	running := it.waitRunning("restart", 2)
	stop()
	stop = it.startController()
	it.waitStatus("restart", counters(4, 2, 0, 0))

	for finished := 0; finished < 4; {
		// Restart right after pods finish, while the controller is reacting to it.
		for _, p := range running {
			it.CompletePod(p.Name, corev1.PodSucceeded)
			finished++
		}
		stop()
		stop = it.startController()
		it.waitStatus("restart", func(s appsv1alpha1.BroadcastJobStatus) bool { return s.Succeeded == int32(finished) })
		if finished < 4 {
			running = it.waitRunning("restart", 2)
		}
	}
	job := it.waitStatus("restart", func(s appsv1alpha1.BroadcastJobStatus) bool { return s.Phase == appsv1alpha1.PhaseCompleted })
	assert.True(t, counters(4, 0, 4, 0)(job.Status), "%+v", job.Status)
	byNode := podsByNode(it.pods("restart"))
	for _, n := range nodes {
		assert.Len(t, byNode[n], 1, "pods on node %s", n)
	}
	assert.Len(t, byNode, 4)
}

// Bad input the API server rejects (CRD schema), field by field.
func TestIntegrationBadInputRejected(t *testing.T) {
	it := newITest(t)
	gvr := schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "broadcastjobs"}
	cases := []struct {
		name  string
		field string
		set   func(spec map[string]any)
	}{
		{"unknown completionPolicy type", "spec.completionPolicy.type", func(s map[string]any) { s["completionPolicy"] = map[string]any{"type": "Sometimes"} }},
		{"unknown failurePolicy type", "spec.failurePolicy.type", func(s map[string]any) { s["failurePolicy"] = map[string]any{"type": "Retry"} }},
		{"negative parallelism", "spec.parallelism", func(s map[string]any) { s["parallelism"] = int64(-1) }},
		{"parallelism over 100%", "spec.parallelism", func(s map[string]any) { s["parallelism"] = "150%" }},
		{"parallelism not a percentage", "spec.parallelism", func(s map[string]any) { s["parallelism"] = "half" }},
		{"negative activeDeadlineSeconds", "spec.completionPolicy.activeDeadlineSeconds", func(s map[string]any) {
			s["completionPolicy"] = map[string]any{"activeDeadlineSeconds": int64(-1)}
		}},
		{"negative ttlSecondsAfterFinished", "spec.completionPolicy.ttlSecondsAfterFinished", func(s map[string]any) {
			s["completionPolicy"] = map[string]any{"ttlSecondsAfterFinished": int64(-5)}
		}},
		{"negative restartLimit", "spec.failurePolicy.restartLimit", func(s map[string]any) { s["failurePolicy"] = map[string]any{"restartLimit": int64(-1)} }},
		{"missing template", "spec.template", func(s map[string]any) { delete(s, "template") }},
	}
	for i, tc := range cases {
		spec := map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "main", "image": "busybox:1.36"}}}}}
		tc.set(spec)
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob",
			"metadata": map[string]any{"name": fmt.Sprintf("bad-%d", i)}, "spec": spec}}
		_, err := it.Env.Dynamic().Resource(gvr).Namespace(it.NS).Create(context.Background(), obj, metav1.CreateOptions{})
		if assert.Error(t, err, tc.name) {
			assert.True(t, apierrors.IsInvalid(err), "%s: %v", tc.name, err)
			assert.Contains(t, err.Error(), tc.field, tc.name)
		}
	}
}

// Bad input the CRD admits (the template is schemaless) but no BroadcastJob can run: a Failed condition with
// reason InvalidSpec, one Warning event, no pod, and no further writes (no hot loop).
func TestIntegrationBadInputAtRuntime(t *testing.T) {
	it := newITest(t)
	it.addNodes(1, nil)
	it.startController()
	for i, tc := range runtimeInvalid {
		name := fmt.Sprintf("invalid-%d", i)
		it.create(it.newJob(name, func(j *appsv1alpha1.BroadcastJob) { tc.mutate(j) }))
		job := it.waitStatus(name, func(s appsv1alpha1.BroadcastJobStatus) bool {
			return hasCondition(s, appsv1alpha1.JobFailed, ReasonInvalidSpec)
		})
		assert.Contains(t, finishedCondition(job.Status).Message, tc.want, tc.name)
		assert.Equal(t, appsv1alpha1.PhaseFailed, job.Status.Phase)
		warning := it.WaitEvent(name, ReasonInvalidSpec)
		assert.Equal(t, corev1.EventTypeWarning, warning.Type)
		assert.Empty(t, it.pods(name), tc.name)
	}
	// No hot loop: the finished jobs are not written again. Nudge every job with an unrelated label change (each
	// is re-synced) and check the status stays put.
	before := map[string]string{}
	for i := range runtimeInvalid {
		job, err := it.job(fmt.Sprintf("invalid-%d", i))
		require.NoError(t, err)
		_, err = it.Client.AppsV1alpha1().BroadcastJobs(it.NS).Patch(context.Background(), job.Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"nudge":"1"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		job, err = it.job(job.Name)
		require.NoError(t, err)
		before[job.Name] = job.ResourceVersion
	}
	// A marker job created afterwards and completed shows the controller has processed everything queued before it.
	it.create(it.newJob("marker", succeedOnRun))
	it.waitStatus("marker", func(s appsv1alpha1.BroadcastJobStatus) bool { return s.Phase == appsv1alpha1.PhaseCompleted })
	for name, rv := range before {
		job, err := it.job(name)
		require.NoError(t, err)
		assert.Equal(t, rv, job.ResourceVersion, "%s was written again", name)
	}
}
