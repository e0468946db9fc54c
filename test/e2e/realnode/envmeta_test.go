package realnode

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// envMetaCloneSet is a CloneSet of one pod whose container app reads label version into $VERSION (side reads
// nothing), with the InPlaceUpdateReady gate, updated InPlaceIfPossible.
func envMetaCloneSet(t *testing.T, registry string, kwok bool) *appsv1alpha1.CloneSet {
	cs := &appsv1alpha1.CloneSet{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(`
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: envmeta}
spec:
  replicas: 1
  selector: {matchLabels: {app: envmeta}}
  updateStrategy: {type: InPlaceIfPossible}
  template:
    metadata:
      labels: {app: envmeta, version: v1}
    spec:
      %[2]s
      readinessGates: [{conditionType: InPlaceUpdateReady}]
      terminationGracePeriodSeconds: 10
      containers:
      - name: app
        image: %[1]s/flotilla/busybox:v1
        command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']
        env: [{name: VERSION, valueFrom: {fieldRef: {fieldPath: "metadata.labels['version']"}}}]
        readinessProbe: {exec: {command: [sh, -c, 'test -n "$VERSION"']}, periodSeconds: 1}
      - name: side
        image: %[1]s/flotilla/busybox:v1
        command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']
`, registry, placement(kwok, "      "))), cs))
	return cs
}

// TestEnvFromMetadataInPlaceOnRealNode: with KruiseDaemon (InPlaceUpdateEnvFromMetadata on by default) in
// cloneset-controller and probe-agent, a template label that app's env reads changes from v1 to v2: the pod is
// updated in place (UID and IP kept), the agent restarts app only (new containerID, restartCount 1; side
// untouched), app runs with VERSION=v2 (kubectl exec), and the CloneSet never counts the pod updated and ready
// before app's restart.
func TestEnvFromMetadataInPlaceOnRealNode(t *testing.T) { envFromMetadataOnRealNode(t, false) }

// TestEnvFromMetadataAgentKilledOnRealNode: the same, with probe-agent killed (SIGKILL) once the pod shows the new
// label and the update in flight — after it decided the restart, before the stop (it waits for the kubelet to see
// the label) — and started again: the container is still restarted exactly once.
func TestEnvFromMetadataAgentKilledOnRealNode(t *testing.T) { envFromMetadataOnRealNode(t, true) }

func envFromMetadataOnRealNode(t *testing.T, killMidway bool) {
	env := testenv.Get(t)
	node, registry, endpoint := probeNode(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	client := versioned.NewForConfigOrDie(env.Config)
	framework.StartScoped(t, env, "cloneset", ns, "--feature-gates=KruiseDaemon=true")
	var agent *framework.Process
	startAgent := func() {
		agent = framework.Start(t, framework.CommandBinary(t, env, "probe", "probe-agent"),
			"--kubeconfig="+framework.AgentKubeconfig(t, env, node), "--feature-gates=KruiseDaemon=true",
			"--node-name="+node, "--cri-socket="+endpoint, "--log-format=console")
		testenv.Eventually(t, time.Minute, func() (bool, error) { return agent.Status("/readyz") == 200 || !agent.Running(), nil })
		require.True(t, agent.Running(), "probe-agent exited:\n%s", agent.Log())
	}
	startAgent()

	_, err := client.AppsV1alpha1().CloneSets(ns).Create(ctx, envMetaCloneSet(t, registry, false), metav1.CreateOptions{})
	require.NoError(t, err)
	var before corev1.Pod
	testenv.Eventually(t, startTimeout, func() (bool, error) {
		pods := envMetaPods(t, env, ns)
		if len(pods) != 1 || testenv.ConditionStatus(&pods[0], corev1.PodReady) != corev1.ConditionTrue {
			return false, fmt.Errorf("pod not ready yet: %d pods", len(pods))
		}
		set, err := containermeta.Decode(&pods[0])
		if err != nil || set == nil || len(set.Containers) != 2 {
			return false, fmt.Errorf("no runtime-containers-meta yet (%v): %v", err, pods[0].Annotations)
		}
		before = pods[0]
		return true, nil
	})
	assert.Equal(t, "v1", printenv(t, env, ns, before.Name, "VERSION"))
	oldApp, oldSide := containerByName(&before, "app"), containerByName(&before, "side")

	_, err = client.AppsV1alpha1().CloneSets(ns).Patch(ctx, "envmeta", types.MergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"labels":{"version":"v2"}}}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	start := time.Now()
	if killMidway {
		testenv.Eventually(t, time.Minute, func() (bool, error) {
			p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return p.Labels["version"] == "v2" && testenv.ConditionStatus(p, inPlaceReady) == corev1.ConditionFalse, nil
		})
		require.NoError(t, syscall.Kill(agent.PID(), syscall.SIGKILL))
		testenv.Eventually(t, 30*time.Second, func() (bool, error) { return !agent.Running(), nil })
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, oldApp.ContainerID, containerByName(p, "app").ContainerID, "killed before the stop (it waits 3 s)")
		startAgent()
	}
	// Polled invariant: whenever the CloneSet counts the pod updated and ready at the new revision, the pod read
	// after that status already runs a new app container.
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		cs, err := client.AppsV1alpha1().CloneSets(ns).Get(ctx, "envmeta", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := cs.Status
		counted := s.ObservedGeneration == cs.Generation && s.UpdatedReadyReplicas == 1 && s.UpdateRevision != "" &&
			p.Labels[pub.ControllerRevisionHashLabelKey] != before.Labels[pub.ControllerRevisionHashLabelKey]
		if counted {
			require.NotEqual(t, oldApp.ContainerID, containerByName(p, "app").ContainerID,
				"the CloneSet counts the pod updated and ready but app was not restarted")
		}
		if !counted || s.CurrentRevision != s.UpdateRevision {
			return false, fmt.Errorf("not updated yet: status %+v", s)
		}
		return true, nil
	})
	t.Logf("env-from-metadata in-place update: %.1f s", time.Since(start).Seconds())

	after, err := env.Kube.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, before.UID, after.UID, "updated in place")
	assert.Equal(t, before.Status.PodIP, after.Status.PodIP)
	assert.Equal(t, "v2", after.Labels["version"])
	app, side := containerByName(after, "app"), containerByName(after, "side")
	assert.NotEqual(t, oldApp.ContainerID, app.ContainerID, "app restarted in a new container")
	assert.EqualValues(t, 1, app.RestartCount)
	assert.Equal(t, oldSide.ContainerID, side.ContainerID, "side untouched")
	assert.Zero(t, side.RestartCount)
	assert.Equal(t, "v2", printenv(t, env, ns, after.Name, "VERSION"), "app runs with the new value")
	set, err := containermeta.Decode(after)
	require.NoError(t, err)
	ok, why := containermeta.Consistent(after, set)
	assert.True(t, ok, why)
	assert.Equal(t, corev1.ConditionTrue, testenv.ConditionStatus(after, inPlaceReady))
}

// TestEnvFromMetadataGateOff: without KruiseDaemon (so InPlaceUpdateEnvFromMetadata is forced off, and no agent
// restarts containers) the same change recreates the pod, as before the agent existed. On kwok nodes: no node
// agent is involved.
func TestEnvFromMetadataGateOff(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	client := versioned.NewForConfigOrDie(env.Config)
	framework.StartScoped(t, env, "cloneset", ns)
	_, err := client.AppsV1alpha1().CloneSets(ns).Create(ctx, envMetaCloneSet(t, kwokOnlyRegistry, true), metav1.CreateOptions{})
	require.NoError(t, err)
	var before corev1.Pod
	testenv.Eventually(t, startTimeout, func() (bool, error) {
		pods := envMetaPods(t, env, ns)
		if len(pods) != 1 || testenv.ConditionStatus(&pods[0], corev1.PodReady) != corev1.ConditionTrue {
			return false, nil
		}
		before = pods[0]
		return true, nil
	})
	_, err = client.AppsV1alpha1().CloneSets(ns).Patch(ctx, "envmeta", types.MergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"labels":{"version":"v2"}}}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		pods := envMetaPods(t, env, ns)
		return len(pods) == 1 && pods[0].UID != before.UID && pods[0].Labels["version"] == "v2" &&
			testenv.ConditionStatus(&pods[0], corev1.PodReady) == corev1.ConditionTrue, nil
	})
	p := envMetaPods(t, env, ns)[0]
	assert.Empty(t, p.Annotations[pub.InPlaceUpdateStateKey], "recreated, never updated in place")
}

// printenv is the value of env var name in the container app of pod, through kubectl exec (the kubelet's exec of the real
// node, not the agent's CRI client).
func printenv(t *testing.T, env *testenv.Env, ns, pod, name string) string {
	t.Helper()
	out, err := exec.Command("kubectl", "--kubeconfig", env.KubeconfigPath, "exec", "-n", ns, pod, "-c", "app", "--", "sh", "-c", `echo "$`+name+`"`).CombinedOutput()
	require.NoError(t, err, "kubectl exec: %s", out)
	return strings.TrimSpace(string(out))
}

// envMetaPods lists the CloneSet's pods (the pods being deleted too: a recreation shows both for a while).
func envMetaPods(t *testing.T, env *testenv.Env, ns string) []corev1.Pod {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=envmeta"})
	require.NoError(t, err)
	return list.Items
}
