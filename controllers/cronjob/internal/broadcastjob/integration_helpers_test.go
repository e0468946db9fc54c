package broadcastjob

import (
	"context"
	"fmt"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillascheme "github.com/flotilla-dev/flotilla/client/clientset/versioned/scheme"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/cronjob/internal/deps"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Unit tests run without a control plane under -short (make unit-test); testenv skips the integration tests then.
func TestMain(m *testing.M) { testenv.Main(m) }

const (
	// Every node a test creates carries testLabel=<namespace> (job nodeSelectors use it, so desired is
	// deterministic) and the NoSchedule taint ownerTaint=<namespace> (so workloads of tests running in parallel in
	// other packages stay off it; our templates tolerate it).
	testLabel          = testenv.TestNodeLabel
	ownerTaint         = testenv.TestNodeTaint
	completeAnnotation = "sim.kwok.x-k8s.io/complete"
	waitTimeout        = 60 * time.Second
)

// itest is one integration test: its namespace, clients and helpers.
type itest struct {
	t      *testing.T
	env    *testenv.Env
	ns     string
	client versioned.Interface
}

func newITest(t *testing.T) *itest {
	env := testenv.Get(t) // skips under -short
	t.Parallel()
	client, err := versioned.NewForConfig(env.Config)
	require.NoError(t, err)
	return &itest{t: t, env: env, ns: env.Namespace(t), client: client}
}

// startController runs the real reconciler in-process with informers restricted to the test namespace (nodes are
// cluster-scoped) and returns a function that stops it and waits (also called in Cleanup).
func (it *itest) startController() (stop func()) {
	kubeInf := informers.NewSharedInformerFactoryWithOptions(it.env.Kube, 0, informers.WithNamespace(it.ns),
		informers.WithTransform(controller.StripManagedFields))
	flotInf := flotillainformers.NewSharedInformerFactoryWithOptions(it.client, 0, flotillainformers.WithNamespace(it.ns))
	c, err := New(deps.Deps{
		Kube: it.env.Kube, Client: it.client, KubeInformers: kubeInf, Informers: flotInf,
		Clock:        clock.RealClock{},
		Recorder:     testenv.EventRecorder(it.t, it.env.Kube, it.ns, "broadcastjob-test", flotillascheme.Scheme),
		QueueOptions: controller.DefaultQueueOptions(),
	})
	require.NoError(it.t, err)
	return testenv.StartController(it.t, c, 2, kubeInf, flotInf)
}

// addNodes creates n kwok nodes labelled for this test (plus labels), tainted with the owner taint (plus taints),
// waits until they are Ready and untainted by the node lifecycle controller, and deletes them in Cleanup.
func (it *itest) addNodes(n int, labels map[string]string, taints ...corev1.Taint) []string {
	return it.env.KwokNodes(it.t, it.ns, n, labels, taints...)
}

// newJob is a BroadcastJob selecting this test's nodes and tolerating the owner taint; mods adjust it.
func (it *itest) newJob(name string, mods ...func(*appsv1alpha1.BroadcastJob)) *appsv1alpha1.BroadcastJob {
	j := &appsv1alpha1.BroadcastJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: it.ns}}
	j.Spec.Template.Labels = map[string]string{"app": name}
	j.Spec.Template.Spec = corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		NodeSelector:  map[string]string{testLabel: it.ns},
		Tolerations:   []corev1.Toleration{{Key: ownerTaint, Operator: corev1.TolerationOpExists}},
		Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36"}},
	}
	for _, m := range mods {
		m(j)
	}
	return j
}

func (it *itest) create(j *appsv1alpha1.BroadcastJob) *appsv1alpha1.BroadcastJob {
	out, err := it.client.AppsV1alpha1().BroadcastJobs(it.ns).Create(context.Background(), j, metav1.CreateOptions{})
	require.NoError(it.t, err)
	return out
}

func (it *itest) job(name string) (*appsv1alpha1.BroadcastJob, error) {
	return it.client.AppsV1alpha1().BroadcastJobs(it.ns).Get(context.Background(), name, metav1.GetOptions{})
}

// pods returns the job's pods sorted by name.
func (it *itest) pods(job string) []corev1.Pod {
	list, err := it.env.Kube.CoreV1().Pods(it.ns).List(context.Background(), metav1.ListOptions{LabelSelector: LabelJobName + "=" + job})
	require.NoError(it.t, err)
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// podsByNode groups pods by the node they target.
func podsByNode(pods []corev1.Pod) map[string][]corev1.Pod {
	out := map[string][]corev1.Pod{}
	for _, p := range pods {
		out[nodeplacement.TargetNode(&p)] = append(out[nodeplacement.TargetNode(&p)], p)
	}
	return out
}

// complete drives a running pod to phase (Succeeded or Failed) through the kwok annotation.
func (it *itest) complete(pod string, phase corev1.PodPhase) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, completeAnnotation, phase)
	_, err := it.env.Kube.CoreV1().Pods(it.ns).Patch(context.Background(), pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(it.t, err)
}

// waitRunning waits until the job has want pods in phase Running (bound by the scheduler) and returns them.
func (it *itest) waitRunning(job string, want int) []corev1.Pod {
	var running []corev1.Pod
	testenv.Eventually(it.t, waitTimeout, func() (bool, error) {
		running = running[:0]
		for _, p := range it.pods(job) {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running = append(running, p)
			}
		}
		return len(running) == want, nil
	})
	return running
}

// waitStatus waits until cond holds for the job's status and returns the job.
func (it *itest) waitStatus(name string, cond func(s appsv1alpha1.BroadcastJobStatus) bool) *appsv1alpha1.BroadcastJob {
	var job *appsv1alpha1.BroadcastJob
	testenv.Eventually(it.t, waitTimeout, func() (bool, error) {
		var err error
		job, err = it.job(name)
		return err == nil && cond(job.Status), err
	})
	return job
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
