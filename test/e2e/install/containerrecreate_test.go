package install

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// containerRecreate: installed from its overlay beside the probe overlay (the node agent, whose KruiseDaemon worker
// recreates the containers), both as pods on the real node, a ContainerRecreateRequest restarts one of a pod's two
// containers in place; the uninstall removes every object of the overlay (Deployment, RBAC, the pod-status
// ValidatingAdmissionPolicy and its binding) and keeps the CRD, the request, the node agent and its policies, and
// the other features.
func containerRecreate(t *testing.T, in *installer) {
	ctx := context.Background()
	others := in.installed()
	in.install("probe")
	in.install("containerrecreate")
	agent, err := in.env.Kube.AppsV1().DaemonSets(agentNamespace).Get(ctx, "probe-agent", metav1.GetOptions{})
	require.NoError(t, err)
	ns := in.env.Namespace(t)

	pods := in.env.Kube.CoreV1().Pods(ns)
	sleeper := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: in.registry + "/flotilla/busybox:v1", Command: []string{"sh", "-c", `trap "exit 0" TERM; sleep 3600 & wait`}}
	}
	_, err = pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": in.node},
			Tolerations:                   []corev1.Toleration{{Key: realNodeLabel, Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{sleeper("app"), sleeper("sidecar")},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var before *corev1.Pod
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		p, err := pods.Get(ctx, "web", metav1.GetOptions{})
		before = p
		return err == nil && testenv.PodReady(p), err
	})

	crrs := testenv.ObjectsOf(t, in.client.AppsV1alpha1().ContainerRecreateRequests(ns), 2*time.Minute)
	crrs.Create(&appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "restart-app"},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{PodName: "web",
			Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "app"}}},
	})
	done := crrs.WaitFor("restart-app", "Completed", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return c.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted
	})
	require.Len(t, done.Status.ContainerRecreateStates, 1)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestSucceeded, done.Status.ContainerRecreateStates[0].Phase, "%+v", done.Status)
	assert.Equal(t, in.node, done.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey])
	after, err := pods.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, before.UID, after.UID, "restarted in place")
	for _, c := range after.Status.ContainerStatuses {
		want := int32(0)
		if c.Name == "app" {
			want = 1
		}
		assert.Equal(t, want, c.RestartCount, "restarts of %s", c.Name)
	}

	in.uninstall("containerrecreate")
	assert.Empty(t, in.present("containerrecreate"), "objects of the containerrecreate overlay left after its uninstall")
	const policy = "flotilla-containerrecreate-controller-pod-status"
	admission := in.env.Kube.AdmissionregistrationV1()
	_, err = admission.ValidatingAdmissionPolicies().Get(ctx, policy, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "ValidatingAdmissionPolicy %s is gone: %v", policy, err)
	_, err = admission.ValidatingAdmissionPolicyBindings().Get(ctx, policy, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "ValidatingAdmissionPolicyBinding %s is gone: %v", policy, err)
	_, err = in.env.Dynamic().Resource(crdGVR).Get(ctx, "containerrecreaterequests.apps.kruise.io", metav1.GetOptions{})
	require.NoError(t, err, "the CRD is kept")
	crrs.Get("restart-app") // the request is kept
	kept, err := in.env.Kube.AppsV1().DaemonSets(agentNamespace).Get(ctx, "probe-agent", metav1.GetOptions{})
	require.NoError(t, err, "the node agent (probe's) is kept")
	assert.Equal(t, agent.UID, kept.UID, "the node agent is the same object")
	for _, p := range in.rendered("probe", "ValidatingAdmissionPolicy") {
		_, err := admission.ValidatingAdmissionPolicies().Get(ctx, p, metav1.GetOptions{})
		assert.NoError(t, err, "probe's policy %s is kept", p)
	}
	in.assertKept(others)
	in.assertAgentReleasedPages()
	in.uninstall("probe")
}

// assertAgentReleasedPages checks that the installed node agent, with the overlay's settings, released its start-up
// pages (--release-startup-pages-after, 30 s after its caches synced): its log reports the heap's and the
// executable's pages, and the executable's resident pages fell.
func (in *installer) assertAgentReleasedPages() {
	ctx := context.Background()
	var line map[string]any
	testenv.Eventually(in.t, 2*time.Minute, func() (bool, error) {
		list, err := in.env.Kube.CoreV1().Pods(agentNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=probe-agent"})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		raw, err := in.env.Kube.CoreV1().Pods(agentNamespace).GetLogs(list.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, nil // the container may not be serving logs yet
		}
		heap := false
		for _, l := range strings.Split(string(raw), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil {
				continue
			}
			switch m["msg"] {
			case "Released the heap's free start-up pages":
				heap = true
			case "Released the executable's start-up pages":
				line = m
			}
		}
		return heap && line != nil, nil
	})
	before, _ := line["rssFileKiBBefore"].(float64)
	after, _ := line["rssFileKiBAfter"].(float64)
	assert.Positive(in.t, before, "RssFile before the release: %v", line)
	assert.Less(in.t, after, before, "the executable's resident pages fell: %v", line)
	in.t.Logf("installed probe-agent released its start-up pages: RssFile %.0f → %.0f KiB", before, after)
}

// present lists (kubectl's "kind/name") the objects of the feature's pinned overlay found on the cluster.
func (in *installer) present(feature string) []string {
	in.t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", in.env.KubeconfigPath, "get", "--ignore-not-found", "-o", "name", "-k", in.pinned(feature))
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	require.NoError(in.t, err, "kubectl get -k %s: %s", feature, stderr)
	return strings.Fields(string(out))
}
