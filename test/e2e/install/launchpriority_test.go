package install

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// launchPriority: installed from its overlay (webhook through its Service, failurePolicy Fail), an Ordered pod on
// the real node gets its barrier env and starts its second container only once the first is ready; the uninstall
// removes the webhook configuration and the Deployment, after which such a pod is created unchanged; the other
// features run on.
func launchPriority(t *testing.T, in *installer) {
	ctx := context.Background()
	others := in.installed()
	in.install("launchpriority")
	ns := in.env.Namespace(t)
	pods := in.env.Kube.CoreV1().Pods(ns)
	ordered := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{"apps.kruise.io/container-launch-priority": "Ordered"}},
			Spec: corev1.PodSpec{
				NodeSelector:                  map[string]string{"kubernetes.io/hostname": in.node},
				Tolerations:                   []corev1.Toleration{{Key: realNodeLabel, Operator: corev1.TolerationOpExists}},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{
					{Name: "first", Image: in.registry + "/flotilla/busybox:v1",
						Command:        []string{"sh", "-c", `trap "exit 0" TERM; (sleep 3; touch /tmp/ready) & sleep 3600 & wait`},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}}, PeriodSeconds: 1}},
					{Name: "second", Image: in.registry + "/flotilla/busybox:v1", Command: []string{"sh", "-c", `trap "exit 0" TERM; sleep 3600 & wait`}},
				},
			},
		}
	}
	barriers := func(p *corev1.Pod) (keys []string) {
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "KRUISE_CONTAINER_BARRIER" {
					keys = append(keys, e.ValueFrom.ConfigMapKeyRef.Key)
				}
			}
		}
		return keys
	}

	// The webhook answers through its Service (a dry run shows the barrier without leaving a pod behind).
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		got, err := pods.Create(ctx, ordered("ordered"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && len(barriers(got)) == 2, nil
	})
	created, err := pods.Create(ctx, ordered("ordered"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"p_0", "p_-1"}, barriers(created))
	var p *corev1.Pod
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		p, err = pods.Get(ctx, "ordered", metav1.GetOptions{})
		return err == nil && testenv.PodReady(p), err
	})
	started := map[string]time.Time{}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running != nil {
			started[s.Name] = s.State.Running.StartedAt.Time
		}
	}
	t.Logf("started: first %s, second %s", started["first"], started["second"])
	assert.GreaterOrEqual(t, started["second"].Sub(started["first"]), 2*time.Second, "second started once first was ready (3 s)")

	in.uninstall("launchpriority")
	_, err = in.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "flotilla-z-launchpriority", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the webhook configuration is gone: %v", err)
	// The API server drops a deleted configuration a moment after: poll until a pod is created unchanged.
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		got, err := pods.Create(ctx, ordered("after"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && len(barriers(got)) == 0, nil
	})
	in.assertKept(others)
}
