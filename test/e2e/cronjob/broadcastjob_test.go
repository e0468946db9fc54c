package cronjob

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// The built binary, under its own ServiceAccount, runs a BroadcastJob on every node it selects: one pod per node,
// placed by the scheduler, each completing, and the job ends Complete with the counters of a finished run.
func TestBroadcastJobRunsOncePerSelectedNode(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	framework.InstallLocalOverlay(t, env)
	nodes := env.KwokNodes(t, ns, 2, nil)
	client := versioned.NewForConfigOrDie(env.Config)
	ctx := context.Background()

	p := framework.StartScoped(t, env, "cronjob", ns, "--enable-advancedcronjob=false")

	job := &appsv1alpha1.BroadcastJob{ObjectMeta: metav1.ObjectMeta{Name: "on-every-node", Namespace: ns}}
	job.Spec.Template.Annotations = map[string]string{"sim.kwok.x-k8s.io/complete": "Succeeded"}
	job.Spec.Template.Spec = corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		NodeSelector:  map[string]string{testenv.TestNodeLabel: ns},
		Tolerations:   []corev1.Toleration{testenv.TestNodeToleration()},
		Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"true"}}},
	}
	_, err := client.AppsV1alpha1().BroadcastJobs(ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	var got *appsv1alpha1.BroadcastJob
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		got, err = client.AppsV1alpha1().BroadcastJobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == appsv1alpha1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	assert.Equal(t, int32(2), got.Status.Desired)
	assert.Equal(t, int32(2), got.Status.Succeeded)
	assert.Equal(t, int32(0), got.Status.Failed)
	assert.Equal(t, int32(0), got.Status.Active)
	assert.NotNil(t, got.Status.CompletionTime)

	pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	onNode := map[string]int{}
	for _, pod := range pods.Items {
		require.True(t, metav1.IsControlledBy(&pod, got), "pod %s is controlled by the BroadcastJob", pod.Name)
		onNode[pod.Spec.NodeName]++
	}
	assert.Equal(t, map[string]int{nodes[0]: 1, nodes[1]: 1}, onNode, "exactly one pod on each selected node")
	if t.Failed() { // seen once in CI (desired 3 for 2 nodes, two pods on one node): what was there
		for _, pod := range pods.Items {
			t.Logf("pod %s node=%q affinity=%v created=%s phase=%s", pod.Name, pod.Spec.NodeName, pod.Spec.Affinity,
				pod.CreationTimestamp.Format(time.RFC3339Nano), pod.Status.Phase)
		}
		all, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: testenv.TestNodeLabel + "=" + ns})
		if err == nil {
			for _, n := range all.Items {
				t.Logf("node %s labelled for the test (created %s)", n.Name, n.CreationTimestamp.Format(time.RFC3339Nano))
			}
		}
	}
	require.True(t, p.Running(), "cronjob-controller exited")
}
