package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// launchPriorityPort is where deploy/overlays/local points the launch-priority pod webhook (hack/run-local.sh).
const launchPriorityPort = "19452"

// orderedContainers are the containers of the launch-priority scenarios (pod spec fields, indented for a pod's
// spec): "first" turns ready 3 s after it starts (its readiness file is created then; a restart starts over, the
// file lives in the container's own filesystem), "second" at once. With apps.kruise.io/container-launch-priority:
// Ordered, second may start only once first is ready.
func orderedContainers(registry, tag, indent string) string {
	return strings.ReplaceAll(fmt.Sprintf(`
terminationGracePeriodSeconds: 10
containers:
- name: first
  image: %[1]s/flotilla/busybox:%[2]s
  command: [sh, -c, 'trap "exit 0" TERM; (sleep 3; touch /tmp/ready) & sleep 3600 & wait']
  readinessProbe: {exec: {command: [test, -f, /tmp/ready]}, periodSeconds: 1}
- name: second
  image: %[1]s/flotilla/busybox:%[2]s
  command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']`, registry, tag), "\n", "\n"+indent)
}

// startedAt returns when container name's current run started (zero when it is not running).
func startedAt(p *corev1.Pod, name string) time.Time {
	if s := containerByName(p, name); s.State.Running != nil {
		return s.State.Running.StartedAt.Time
	}
	return time.Time{}
}

// TestContainerLaunchPriorityOnRealNode runs launchpriority-controller (its pod webhook where the local overlay
// points the API server, its reconciler on the test's namespace) against the real kubelet: an Ordered pod's second
// container starts only after the first is ready, at creation and through a CloneSet's in-place update of both
// images (kit/inplace's priority batches). The kwok nodes start containers without reading their env, so there
// is no kwok half. The subtests share the one process, so they run in turn.
func TestContainerLaunchPriorityOnRealNode(t *testing.T) {
	env := testenv.Get(t)
	registry := realNode(t, env)
	if registry == "" {
		t.Skip("no real node in the cluster (REAL_NODES=1 hack/cluster/up.sh adds one)")
	}
	ns := env.Namespace(t)
	framework.StartScoped(t, env, "launchpriority", ns, "--webhook-host=127.0.0.1", "--webhook-port="+launchPriorityPort)
	waitBarrierInjected(t, env, ns, registry)

	t.Run("pod creation", func(t *testing.T) { orderedPodStart(t, env, ns, registry) })
	t.Run("cloneset in-place update", func(t *testing.T) { orderedInPlaceUpdate(t, env, ns, registry) })
}

// waitBarrierInjected polls with a dry-run create until the webhook answers (the process has written its CA
// into the configuration): under the local overlay's failurePolicy Ignore, a pod created before would go without
// the barrier.
func waitBarrierInjected(t *testing.T, env *testenv.Env, ns, registry string) {
	pod := barePod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: probe, annotations: {apps.kruise.io/container-launch-priority: Ordered}}\nspec:%s",
		orderedContainers(registry, "v1", "  "))
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		got, err := env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && len(got.Spec.Containers[1].Env) == 1, nil
	})
}

func orderedPodStart(t *testing.T, env *testenv.Env, ns, registry string) {
	ctx := context.Background()
	pod := barePod(t, `
apiVersion: v1
kind: Pod
metadata: {name: ordered, annotations: {apps.kruise.io/container-launch-priority: Ordered}}
spec:
  %s%s`, placement(false, "  "), orderedContainers(registry, "v1", "  "))
	rec := record(t, env, ns)
	start := time.Now()
	created, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	for i, c := range created.Spec.Containers {
		ref := c.Env[len(c.Env)-1].ValueFrom.ConfigMapKeyRef
		assert.Equal(t, fmt.Sprintf("ordered-barrier/p_%d", -i), ref.Name+"/"+ref.Key, "container %s's barrier", c.Name)
	}

	var p *corev1.Pod
	testenv.Eventually(t, startTimeout, func() (bool, error) {
		p, err = env.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && testenv.PodReady(p), err
	})
	rec.logSteps(t, p.Name, p.UID, start)
	first, second := startedAt(p, "first"), startedAt(p, "second")
	t.Logf("started: first %s, second %s (+%s)", first.Format(time.RFC3339), second.Format(time.RFC3339), second.Sub(first))
	// first turns ready 3 s after its start; the kubelet's times are whole seconds.
	assert.GreaterOrEqual(t, second.Sub(first), 2*time.Second, "second started only after first was ready")
	assert.Equal(t, int32(0), containerByName(p, "second").RestartCount, "second waited (CreateContainerConfigError), it did not crash")

	cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "ordered-barrier", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"p_0": "true", "p_-1": "true"}, cm.Data)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "ordered", UID: created.UID}}, cm.OwnerReferences)
	// The controller, as its ServiceAccount (through the policy pinning its pod writes), marks the pod done.
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		got, err := env.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && got.Annotations["apps.kruise.io/container-launch-priority-completed"] == "true", err
	})
}

func orderedInPlaceUpdate(t *testing.T, env *testenv.Env, ns, registry string) {
	ctx := context.Background()
	client := versioned.NewForConfigOrDie(env.Config)
	framework.StartScoped(t, env, "cloneset", ns)
	cs := &appsv1alpha1.CloneSet{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(`
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: ordered}
spec:
  replicas: 1
  selector: {matchLabels: {app: lp-cs}}
  updateStrategy: {type: InPlaceIfPossible}
  template:
    metadata:
      labels: {app: lp-cs}
      annotations: {apps.kruise.io/container-launch-priority: Ordered}
    spec:
      %s%s`, placement(false, "      "), orderedContainers(registry, "v1", "      "))), cs))
	_, err := client.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{})
	require.NoError(t, err)

	v2 := registry + "/flotilla/busybox:v2"
	var before corev1.Pod
	testenv.Eventually(t, startTimeout, func() (bool, error) {
		pods := clonePods(t, env, ns)
		if len(pods) != 1 || !testenv.PodReady(&pods[0]) {
			return false, nil
		}
		before = pods[0]
		return true, nil
	})
	require.GreaterOrEqual(t, startedAt(&before, "second").Sub(startedAt(&before, "first")), 2*time.Second, "created in order")

	rec := record(t, env, ns)
	start := time.Now()
	patch := `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"` + v2 + `"},` +
		`{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"` + v2 + `"}]`
	_, err = client.AppsV1alpha1().CloneSets(ns).Patch(ctx, "ordered", types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)

	var after corev1.Pod
	testenv.Eventually(t, 2*startTimeout, func() (bool, error) {
		pods := clonePods(t, env, ns)
		if len(pods) != 1 || !testenv.PodReady(&pods[0]) {
			return false, nil
		}
		p := pods[0]
		for _, c := range []string{"first", "second"} {
			if s := containerByName(&p, c); s.Image != v2 || !s.Ready || s.State.Running == nil {
				return false, nil
			}
		}
		after = p
		return true, nil
	})
	rec.logSteps(t, after.Name, after.UID, start)
	assert.Equal(t, before.UID, after.UID, "updated in place")
	for _, c := range []string{"first", "second"} {
		assert.Equal(t, int32(1), containerByName(&after, c).RestartCount, "container %s restarted once", c)
	}
	first, second := startedAt(&after, "first"), startedAt(&after, "second")
	t.Logf("restarted: first %s, second %s (+%s)", first.Format(time.RFC3339), second.Format(time.RFC3339), second.Sub(first))
	assert.GreaterOrEqual(t, second.Sub(first), 2*time.Second, "second restarted on v2 only after first was ready on v2")
}

// clonePods lists the pods of the scenario's CloneSet.
func clonePods(t *testing.T, env *testenv.Env, ns string) []corev1.Pod {
	list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=lp-cs"})
	require.NoError(t, err)
	return list.Items
}
