package realnode

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
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
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// envMetaTemplate is the pod template (under "spec.template:") of the env-from-metadata workloads: container app
// reads label version (v1) into $VERSION and is ready once it is set, side reads nothing; with the InPlaceUpdateReady
// gate when gate is set (Advanced DaemonSet adds it to its pods itself).
func envMetaTemplate(registry string, gate, kwok bool) string {
	gates := ""
	if gate {
		gates = "\n      readinessGates: [{conditionType: InPlaceUpdateReady}]"
	}
	return fmt.Sprintf(`
  template:
    metadata:
      labels: {app: envmeta, version: v1}
    spec:
      %[2]s%[3]s
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
`, registry, placement(kwok, "      "), gates)
}

// envMetaCloneSet is a CloneSet of one pod of envMetaTemplate, with the InPlaceUpdateReady gate, updated
// InPlaceIfPossible.
func envMetaCloneSet(t *testing.T, registry string, kwok bool) *appsv1alpha1.CloneSet {
	cs := &appsv1alpha1.CloneSet{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(envMetaCloneSetYAML+envMetaTemplate(registry, true, kwok)), cs))
	return cs
}

const envMetaCloneSetYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: envmeta}
spec:
  replicas: 1
  selector: {matchLabels: {app: envmeta}}
  updateStrategy: {type: InPlaceIfPossible}`

// envMetaWorkload is one workload kind of the env-from-metadata scenario: its controller (framework.StartScoped's
// name), how to create the workload "envmeta" of one pod of envMetaTemplate on the real node and merge-patch it, and
// what its status says of pod p (at the new revision): counted when it counts the pod updated and ready (available,
// for a DaemonSet), done when the rollout is over too.
type envMetaWorkload struct {
	name, controller string
	create           func(ctx context.Context, c versioned.Interface, ns, registry string) error
	patch            func(ctx context.Context, c versioned.Interface, ns string, patch []byte) error
	status           func(ctx context.Context, c versioned.Interface, ns string, p *corev1.Pod) (counted, done bool, summary string, err error)
}

var envMetaCloneSetKind = envMetaWorkload{
	name: "CloneSet", controller: "cloneset",
	create: func(ctx context.Context, c versioned.Interface, ns, registry string) error {
		cs := &appsv1alpha1.CloneSet{}
		if err := yaml.UnmarshalStrict([]byte(envMetaCloneSetYAML+envMetaTemplate(registry, true, false)), cs); err != nil {
			return err
		}
		_, err := c.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{})
		return err
	},
	patch: func(ctx context.Context, c versioned.Interface, ns string, patch []byte) error {
		_, err := c.AppsV1alpha1().CloneSets(ns).Patch(ctx, "envmeta", types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	},
	status: func(ctx context.Context, c versioned.Interface, ns string, _ *corev1.Pod) (bool, bool, string, error) {
		cs, err := c.AppsV1alpha1().CloneSets(ns).Get(ctx, "envmeta", metav1.GetOptions{})
		if err != nil {
			return false, false, "", err
		}
		s := cs.Status
		counted := s.ObservedGeneration == cs.Generation && s.UpdatedReadyReplicas == 1 && s.UpdateRevision != ""
		return counted, counted && s.CurrentRevision == s.UpdateRevision, fmt.Sprintf("generation %d, status %+v", cs.Generation, s), nil
	},
}

var envMetaKinds = []envMetaWorkload{
	envMetaCloneSetKind,
	{
		// Advanced StatefulSet updates in place only pods with the InPlaceUpdateReady gate (its README).
		name: "AdvancedStatefulSet", controller: "statefulset",
		create: func(ctx context.Context, c versioned.Interface, ns, registry string) error {
			set := &appsv1beta1.StatefulSet{}
			if err := yaml.UnmarshalStrict([]byte(`
apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata: {name: envmeta}
spec:
  replicas: 1
  serviceName: envmeta
  selector: {matchLabels: {app: envmeta}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {podUpdatePolicy: InPlaceIfPossible}}`+envMetaTemplate(registry, true, false)), set); err != nil {
				return err
			}
			_, err := c.AppsV1beta1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{})
			return err
		},
		patch: func(ctx context.Context, c versioned.Interface, ns string, patch []byte) error {
			_, err := c.AppsV1beta1().StatefulSets(ns).Patch(ctx, "envmeta", types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		status: func(ctx context.Context, c versioned.Interface, ns string, _ *corev1.Pod) (bool, bool, string, error) {
			set, err := c.AppsV1beta1().StatefulSets(ns).Get(ctx, "envmeta", metav1.GetOptions{})
			if err != nil {
				return false, false, "", err
			}
			s := set.Status
			counted := s.ObservedGeneration == set.Generation && s.UpdatedReadyReplicas == 1 && s.UpdateRevision != ""
			return counted, counted && s.CurrentRevision == s.UpdateRevision, fmt.Sprintf("generation %d, status %+v", set.Generation, s), nil
		},
	},
	{
		// An Advanced DaemonSet on the real node only; InPlaceIfPossible gives its pods the InPlaceUpdateReady gate.
		// It has no updated-ready count: the pod is counted when updatedNumberScheduled and numberAvailable (ready,
		// InPlaceUpdateReady not False) are 1 at the pod's hash.
		name: "AdvancedDaemonSet", controller: "daemonset",
		create: func(ctx context.Context, c versioned.Interface, ns, registry string) error {
			ds := &appsv1alpha1.DaemonSet{}
			if err := yaml.UnmarshalStrict([]byte(`
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata: {name: envmeta}
spec:
  selector: {matchLabels: {app: envmeta}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {rollingUpdateType: InPlaceIfPossible}}`+envMetaTemplate(registry, false, false)), ds); err != nil {
				return err
			}
			_, err := c.AppsV1alpha1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})
			return err
		},
		patch: func(ctx context.Context, c versioned.Interface, ns string, patch []byte) error {
			_, err := c.AppsV1alpha1().DaemonSets(ns).Patch(ctx, "envmeta", types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		status: func(ctx context.Context, c versioned.Interface, ns string, p *corev1.Pod) (bool, bool, string, error) {
			ds, err := c.AppsV1alpha1().DaemonSets(ns).Get(ctx, "envmeta", metav1.GetOptions{})
			if err != nil {
				return false, false, "", err
			}
			s := ds.Status
			counted := s.ObservedGeneration == ds.Generation && s.DesiredNumberScheduled == 1 && s.UpdatedNumberScheduled == 1 &&
				s.NumberAvailable == 1 && s.DaemonSetHash == p.Labels[pub.ControllerRevisionHashLabelKey]
			return counted, counted, fmt.Sprintf("generation %d, status %+v", ds.Generation, s), nil
		},
	},
}

// TestEnvFromMetadataInPlaceOnRealNode: with KruiseDaemon (InPlaceUpdateEnvFromMetadata on by default) in the
// workload's controller and probe-agent, a template label that app's env reads changes from v1 to v2, for a
// CloneSet, an Advanced StatefulSet and an Advanced DaemonSet (subtests, each with its own controller and agent):
// the pod is updated in place (UID and IP kept), the agent restarts app only (new containerID, restartCount 1; side
// untouched), app runs with VERSION=v2 (kubectl exec), and the workload never counts the pod updated and ready
// before app's restart.
func TestEnvFromMetadataInPlaceOnRealNode(t *testing.T) {
	for _, w := range envMetaKinds {
		t.Run(w.name, func(t *testing.T) { envFromMetadataOnRealNode(t, w, false) })
	}
}

// TestEnvFromMetadataAgentKilledOnRealNode: the CloneSet case, with probe-agent killed (SIGKILL) once the pod shows
// the new label and the update in flight — after it decided the restart, before the stop (it waits for the kubelet
// to see the label) — and started again: the container is still restarted exactly once.
func TestEnvFromMetadataAgentKilledOnRealNode(t *testing.T) {
	envFromMetadataOnRealNode(t, envMetaCloneSetKind, true)
}

func envFromMetadataOnRealNode(t *testing.T, w envMetaWorkload, killMidway bool) {
	env := testenv.Get(t)
	node, registry, endpoint := probeNode(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	client := versioned.NewForConfigOrDie(env.Config)
	framework.StartScoped(t, env, w.controller, ns, "--feature-gates=KruiseDaemon=true")
	agent := startNodeAgent(t, env, node, endpoint, "KruiseDaemon=true")

	require.NoError(t, w.create(ctx, client, ns, registry))
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
	require.Equal(t, corev1.ConditionTrue, testenv.ConditionStatus(&before, inPlaceReady), "the pod has the InPlaceUpdateReady gate, True")
	assert.Equal(t, "v1", printenv(t, env, ns, before.Name, "VERSION"))
	oldApp, oldSide := containerByName(&before, "app"), containerByName(&before, "side")

	require.NoError(t, w.patch(ctx, client, ns, []byte(`{"spec":{"template":{"metadata":{"labels":{"version":"v2"}}}}}`)))
	start := time.Now()
	if killMidway {
		testenv.Eventually(t, time.Minute, func() (bool, error) {
			p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return p.Labels["version"] == "v2" && testenv.ConditionStatus(p, inPlaceReady) == corev1.ConditionFalse, nil
		})
		killAgent(t, agent)
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, oldApp.ContainerID, containerByName(p, "app").ContainerID, "killed before the stop (it waits 3 s)")
		startNodeAgent(t, env, node, endpoint, "KruiseDaemon=true")
	}
	// Polled invariant: whenever the workload counts the pod updated and ready at the new revision, the pod read
	// after that status already runs a new app container. inFlight counts the polls that saw the pod at the new
	// revision with app not restarted yet (logged: the window the invariant is about, when the polls caught it).
	inFlight := 0
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		counted, done, summary, err := w.status(ctx, client, ns, p)
		if err != nil {
			return false, err
		}
		if p, err = env.Kube.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		newRevision := p.Labels[pub.ControllerRevisionHashLabelKey] != before.Labels[pub.ControllerRevisionHashLabelKey]
		if newRevision && containerByName(p, "app").ContainerID == oldApp.ContainerID {
			inFlight++
		}
		counted = counted && newRevision
		if counted {
			require.NotEqual(t, oldApp.ContainerID, containerByName(p, "app").ContainerID,
				"the %s counts the pod updated and ready but app was not restarted: %s; pod read after it: %s", w.name, summary, stepOf(p))
		}
		if !counted || !done {
			return false, fmt.Errorf("not updated yet: %s", summary)
		}
		return true, nil
	})
	t.Logf("%s env-from-metadata in-place update: %.1f s (%d polls saw the new revision before app's restart, none counted)",
		w.name, time.Since(start).Seconds(), inFlight)

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
	// stdout only: kubectl logs its own client noise to stderr (seen in CI: websocket "Unknown stream id 1").
	cmd := exec.Command("kubectl", "--kubeconfig", env.KubeconfigPath, "exec", "-n", ns, pod, "-c", "app", "--", "sh", "-c", `echo "$`+name+`"`)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl exec: %s%s", out, stderr.String())
	return strings.TrimSpace(string(out))
}

// envMetaPods lists the CloneSet's pods (the pods being deleted too: a recreation shows both for a while).
func envMetaPods(t *testing.T, env *testenv.Env, ns string) []corev1.Pod {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=envmeta"})
	require.NoError(t, err)
	return list.Items
}
