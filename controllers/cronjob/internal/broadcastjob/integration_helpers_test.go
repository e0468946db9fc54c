package broadcastjob

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// Unit tests run without a control plane under -short (make unit-test); testenv skips the integration tests then.
func TestMain(m *testing.M) { testenv.Main(m) }

const (
	// Every node a test creates carries testLabel=<namespace> (job nodeSelectors use it, so desired is
	// deterministic) and the NoSchedule taint ownerTaint=<namespace> (so workloads of tests running in parallel in
	// other packages stay off it; our templates tolerate it).
	testLabel   = testenv.TestNodeLabel
	ownerTaint  = testenv.TestNodeTaint
	waitTimeout = 60 * time.Second
)

// itest is one integration test: its lab (namespace, clients, waits) and the BroadcastJob helpers.
type itest struct {
	*lab.Lab
	bjs    *testenv.Objects[*appsv1alpha1.BroadcastJob]
	podAPI *testenv.Objects[*corev1.Pod]
}

func newITest(t *testing.T) *itest {
	it := &itest{Lab: lab.New(t, waitTimeout)} // skips under -short
	it.bjs = testenv.ObjectsOf(t, it.Client.AppsV1alpha1().BroadcastJobs(it.NS), waitTimeout)
	it.podAPI = it.PodObjects()
	return it
}

// startController runs the real reconciler in-process with informers restricted to the test namespace (nodes are
// cluster-scoped) and returns a function that stops it and waits (also called in Cleanup).
func (it *itest) startController() (stop func()) {
	d := it.Deps("broadcastjob-test", nil)
	c, err := New(d)
	require.NoError(it.T, err)
	return it.Start(c, 2, d)
}

// addNodes creates n kwok nodes labelled for this test (plus labels), tainted with the owner taint (plus taints),
// waits until they are Ready and untainted by the node lifecycle controller, and deletes them in Cleanup.
func (it *itest) addNodes(n int, labels map[string]string, taints ...corev1.Taint) []string {
	return it.Env.KwokNodes(it.T, it.NS, n, labels, taints...)
}

// newJob is a BroadcastJob selecting this test's nodes and tolerating the owner taint; mods adjust it.
func (it *itest) newJob(name string, mods ...func(*appsv1alpha1.BroadcastJob)) *appsv1alpha1.BroadcastJob {
	j := &appsv1alpha1.BroadcastJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: it.NS}}
	j.Spec.Template.Labels = map[string]string{"app": name}
	j.Spec.Template.Spec = corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		NodeSelector:  map[string]string{testLabel: it.NS},
		Tolerations:   []corev1.Toleration{{Key: ownerTaint, Operator: corev1.TolerationOpExists}},
		Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36"}},
	}
	for _, m := range mods {
		m(j)
	}
	return j
}

func (it *itest) create(j *appsv1alpha1.BroadcastJob) *appsv1alpha1.BroadcastJob {
	it.T.Helper()
	return it.bjs.Create(j)
}

func (it *itest) job(name string) (*appsv1alpha1.BroadcastJob, error) {
	return it.Client.AppsV1alpha1().BroadcastJobs(it.NS).Get(context.Background(), name, metav1.GetOptions{})
}

// pods returns the job's pods sorted by name, terminating ones included.
func (it *itest) pods(job string) []corev1.Pod {
	it.T.Helper()
	return it.ListPods(LabelJobName + "=" + job)
}

// podsByNode groups pods by the node they target.
func podsByNode(pods []corev1.Pod) map[string][]corev1.Pod {
	out := map[string][]corev1.Pod{}
	for _, p := range pods {
		out[nodeplacement.TargetNode(&p)] = append(out[nodeplacement.TargetNode(&p)], p)
	}
	return out
}

// running are the pods in phase Running (bound by the scheduler) and not being deleted.
func running(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// waitRunning waits until the job has want pods in phase Running (bound by the scheduler) and returns them.
func (it *itest) waitRunning(job string, want int) []corev1.Pod {
	it.T.Helper()
	pods := it.WaitPods(func() []corev1.Pod { return it.pods(job) }, fmt.Sprintf("%d pods of %s Running", want, job),
		func(pods []corev1.Pod) bool { return len(running(pods)) == want })
	return running(pods)
}

// waitRunningExcept waits for a Running pod of the job other than name.
func (it *itest) waitRunningExcept(job, name string) corev1.Pod {
	it.T.Helper()
	except := func(pods []corev1.Pod) []corev1.Pod {
		return slices.DeleteFunc(running(pods), func(p corev1.Pod) bool { return p.Name == name })
	}
	pods := it.WaitPods(func() []corev1.Pod { return it.pods(job) }, "a Running pod of "+job+" other than "+name,
		func(pods []corev1.Pod) bool { return len(except(pods)) > 0 })
	return except(pods)[0]
}

// waitStatus waits until cond holds for the job's status and returns the job.
func (it *itest) waitStatus(name string, cond func(s appsv1alpha1.BroadcastJobStatus) bool) *appsv1alpha1.BroadcastJob {
	it.T.Helper()
	return it.bjs.WaitFor(name, "status", func(j *appsv1alpha1.BroadcastJob) bool { return cond(j.Status) })
}

// counters is a status predicate on the four counters.
func counters(desired, active, succeeded, failed int32) func(appsv1alpha1.BroadcastJobStatus) bool {
	return func(s appsv1alpha1.BroadcastJobStatus) bool {
		return s.Desired == desired && s.Active == active && s.Succeeded == succeeded && s.Failed == failed
	}
}

func hasCondition(s appsv1alpha1.BroadcastJobStatus, t appsv1alpha1.JobConditionType, reason string) bool {
	c := finishedCondition(s)
	return c != nil && c.Type == t && c.Reason == reason
}
