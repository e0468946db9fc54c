package realnode

import (
	"context"
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
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

const replicas = 2

// sideImageV2 is the JSON patch of both workloads' templates: only container "side" changes image.
func sideImageV2(registry string) []byte {
	return []byte(`[{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"` + registry + `/flotilla/busybox:v2"}]`)
}

func TestCloneSetInPlaceUpdateOnRealNode(t *testing.T) {
	env := testenv.Get(t)
	onEachNodeKind(t, env, func(t *testing.T, registry string, kwok bool) { cloneSetInPlace(t, env, registry, kwok) })
}

func cloneSetInPlace(t *testing.T, env *testenv.Env, registry string, kwok bool) {
	ns := env.Namespace(t)
	client := versioned.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	framework.StartScoped(t, env, "cloneset", ns)

	cs := &appsv1alpha1.CloneSet{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: real}
spec:
  replicas: 2
  selector: {matchLabels: {app: real-cs}}
  updateStrategy: {type: InPlaceIfPossible, maxUnavailable: 2}
  template:`+podTemplate("real-cs", registry, false, kwok)), cs))
	_, err := client.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{})
	require.NoError(t, err)

	inPlaceOnRealNode(t, env, ns, "app=real-cs", registry, func() {
		_, err := client.AppsV1alpha1().CloneSets(ns).Patch(ctx, "real", types.JSONPatchType, sideImageV2(registry), metav1.PatchOptions{})
		require.NoError(t, err)
	})
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		got, err := client.AppsV1alpha1().CloneSets(ns).Get(ctx, "real", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := got.Status
		return s.UpdatedReadyReplicas == replicas && s.CurrentRevision == s.UpdateRevision && s.ObservedGeneration == got.Generation, nil
	})
}

func TestAdvancedStatefulSetInPlaceUpdateOnRealNode(t *testing.T) {
	env := testenv.Get(t)
	onEachNodeKind(t, env, func(t *testing.T, registry string, kwok bool) { statefulSetInPlace(t, env, registry, kwok) })
}

func statefulSetInPlace(t *testing.T, env *testenv.Env, registry string, kwok bool) {
	ns := env.Namespace(t)
	client := versioned.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	framework.StartScoped(t, env, "statefulset", ns)

	set := &appsv1beta1.StatefulSet{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata: {name: real}
spec:
  replicas: 2
  serviceName: real
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: real-sts}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {podUpdatePolicy: InPlaceIfPossible, maxUnavailable: 2}}
  template:`+podTemplate("real-sts", registry, true, kwok)), set))
	_, err := client.AppsV1beta1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{})
	require.NoError(t, err)

	inPlaceOnRealNode(t, env, ns, "app=real-sts", registry, func() {
		_, err := client.AppsV1beta1().StatefulSets(ns).Patch(ctx, "real", types.JSONPatchType, sideImageV2(registry), metav1.PatchOptions{})
		require.NoError(t, err)
	})
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		got, err := client.AppsV1beta1().StatefulSets(ns).Get(ctx, "real", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := got.Status
		return s.UpdatedReadyReplicas == replicas && s.CurrentRevision == s.UpdateRevision && s.ObservedGeneration == got.Generation, nil
	})
}

// inPlaceOnRealNode waits for the workload's pods on the real node, runs update (side: v1 → v2) and checks
// what the kubelet did: only "side" restarted (new containerID and imageID, restartCount 1, its old container
// in lastState), "web", the pod's UID and IP unchanged; the controller's InPlaceUpdateReady gate went False and
// the kubelet reported Ready=False (ReadinessGatesNotReady) then True again.
func inPlaceOnRealNode(t *testing.T, env *testenv.Env, ns, selector, registry string, update func()) {
	t.Helper()
	v1, v2 := registry+"/flotilla/busybox:v1", registry+"/flotilla/busybox:v2"
	testenv.Eventually(t, startTimeout, allOnImage(t, env, ns, selector, v1, replicas))
	rec := record(t, env, ns)
	before := map[types.UID]corev1.Pod{}
	for _, p := range listPods(t, env, ns, selector) {
		require.Equal(t, corev1.ConditionTrue, testenv.ConditionStatus(&p, inPlaceReady), "pod %s: the controller sets the gate at creation", p.Name)
		for _, c := range p.Status.ContainerStatuses {
			require.True(t, strings.HasPrefix(c.ImageID, registry+"/flotilla/busybox@sha256:"), "imageID %q: a digest of the image's repository", c.ImageID)
			require.Zero(t, c.RestartCount, "container %s of %s", c.Name, p.Name)
		}
		before[p.UID] = p
	}
	start := time.Now()
	update()
	testenv.Eventually(t, startTimeout, allOnImage(t, env, ns, selector, v2, replicas))
	t.Logf("in-place update of %d pods: %.1f s", replicas, time.Since(start).Seconds())

	for _, p := range listPods(t, env, ns, selector) {
		// A kubelet lists container statuses sorted by name, not in spec order (web, side).
		var names []string
		for _, c := range p.Status.ContainerStatuses {
			names = append(names, c.Name)
		}
		assert.Equal(t, []string{"side", "web"}, names, "pod %s: containerStatuses order", p.Name)
		old, ok := before[p.UID]
		if !assert.True(t, ok, "pod %s (uid %s) was recreated, not updated in place", p.Name, p.UID) {
			continue
		}
		assert.Equal(t, old.Status.PodIP, p.Status.PodIP, "pod %s IP", p.Name)
		oldWeb, web := containerByName(&old, "web"), containerByName(&p, "web")
		assert.Equal(t, oldWeb.ContainerID, web.ContainerID, "pod %s: web must not restart", p.Name)
		assert.Zero(t, web.RestartCount, "pod %s: web restartCount", p.Name)
		assert.Equal(t, oldWeb.ImageID, web.ImageID, "pod %s: web imageID", p.Name)
		oldSide, side := containerByName(&old, "side"), containerByName(&p, "side")
		assert.NotEqual(t, oldSide.ContainerID, side.ContainerID, "pod %s: side restarted in a new container", p.Name)
		assert.NotEqual(t, oldSide.ImageID, side.ImageID, "pod %s: side's imageID is v2's digest", p.Name)
		assert.Equal(t, v2, side.Image, "pod %s: side image", p.Name)
		assert.EqualValues(t, 1, side.RestartCount, "pod %s: side restartCount", p.Name)
		if assert.NotNil(t, side.LastTerminationState.Terminated, "pod %s: side lastState.terminated", p.Name) {
			assert.Equal(t, oldSide.ContainerID, side.LastTerminationState.Terminated.ContainerID, "pod %s: lastState is the old container", p.Name)
			assert.Zero(t, side.LastTerminationState.Terminated.ExitCode, "pod %s: side exits 0 on SIGTERM", p.Name)
		}

		rec.caughtUp(t, &p)
		seq := rec.of(p.UID)
		rec.logSteps(t, p.Name, p.UID, start)

		// From the spec change (generation+1) until the node reports side restarted: on the real node SIGTERM,
		// exit, image check, create, start and the kubelet's next status (1.4-2 s seen here, README row 5); kwok's
		// stage waits 1 s. Before, kwok took 0.3 s.
		iSpec, specSeen := rec.firstAt(p.UID, func(s statusStep) bool { return s.Generation > old.Generation })
		iRestart, restarted := rec.firstAt(p.UID, func(s statusStep) bool {
			return strings.Contains(s.Containers, "side:running/ready=false/rc=1/") || strings.Contains(s.Containers, "side:running/ready=true/rc=1/")
		})
		if assert.True(t, iSpec >= 0 && iRestart > iSpec, "pod %s: spec change, then restart", p.Name) {
			took := restarted.Sub(specSeen)
			t.Logf("%s: side restarted %.2f s after the pod's spec changed", p.Name, took.Seconds())
			// The bound holds exactly where we define the stage (kwok waits 1 s). A real kubelet may restart faster
			// than the test's watch sees the spec change (0.31 s seen in CI under load): there only the order counts.
			if strings.HasSuffix(t.Name(), "/kwok") {
				assert.GreaterOrEqual(t, took, 600*time.Millisecond, "pod %s: a restart is not instantaneous", p.Name)
			}
		}

		// The restarted container has a readiness probe: it is running but not ready until the probe passes, so
		// ContainersReady and Ready are False for a while, then it is ready again (README row 3).
		unready, _ := rec.firstAt(p.UID, func(s statusStep) bool {
			return strings.Contains(s.Containers, "side:running/ready=false/rc=1/") && s.ContainersReady == "False" && strings.HasPrefix(s.Ready, "False")
		})
		assert.GreaterOrEqual(t, unready, 0, "pod %s: side never seen restarted but not ready (ContainersReady=False, Ready=False)", p.Name)

		// observedGeneration: the node has seen the generation with the new image (README row 7).
		assert.Equal(t, p.Generation, p.Status.ObservedGeneration, "pod %s: status.observedGeneration", p.Name)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.ContainersReady {
				assert.Equal(t, p.Generation, c.ObservedGeneration, "pod %s: ContainersReady's observedGeneration", p.Name)
			}
		}

		// The node's events for the restart (README row 6): Killing, then Pulled, Created and Started.
		if !assert.Eventually(t, func() bool { return restartEvents(t, env, p) == "" }, 30*time.Second, 200*time.Millisecond,
			"pod %s: restart events", p.Name) {
			t.Logf("pod %s: %s", p.Name, restartEvents(t, env, p))
		}
		// The gate went False and the pod was reported not Ready because of it (our controllers write Ready
		// with the gate, as OpenKruise's do; the kubelet recomputes it: see TestReadinessGateOnRealNode for
		// the kubelet alone), and Ready came back True with the gate at the end.
		sawGateNotReady := false
		for _, s := range seq {
			if s.Gate == "False" && s.Ready == "False(ReadinessGatesNotReady)" {
				sawGateNotReady = true
			}
		}
		assert.True(t, sawGateNotReady, "pod %s: never Ready=False(ReadinessGatesNotReady) while InPlaceUpdateReady was False", p.Name)
		if assert.NotEmpty(t, seq) {
			last := seq[len(seq)-1]
			assert.Equal(t, "True", last.Ready, "pod %s: last step", p.Name)
			assert.Equal(t, "True", last.Gate, "pod %s: last step", p.Name)
			assert.Contains(t, last.Containers, "side:running/ready=true/rc=1/", "pod %s: last step", p.Name)
		}
		if t.Failed() { // what the kubelet did (Killing, Pulled, Started, ... with their reasons)
			for _, e := range env.Events(t, p.Namespace, p.Name) {
				t.Logf("%s event: %s %s x%d: %s", p.Name, e.Type, e.Reason, e.Count, e.Message)
			}
		}
	}
}

func listPods(t *testing.T, env *testenv.Env, ns, selector string) []corev1.Pod {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	require.Len(t, list.Items, replicas)
	return list.Items
}

// restartEvents returns what is missing from pod p's events of an in-place restart ("" when nothing is): Killing
// with the kubelet's message, then Pulled, Created and Started no earlier than it (event times have a resolution of
// one second; the kubelet's start-up events of the pod come before the restart).
func restartEvents(t *testing.T, env *testenv.Env, p corev1.Pod) string {
	events := env.Events(t, p.Namespace, p.Name)
	var killing time.Time
	for _, e := range events {
		if e.Reason == "Killing" && strings.Contains(e.Message, "definition changed, will be restarted") {
			killing = eventTime(e)
		}
	}
	if killing.IsZero() {
		return "no Killing event with \"definition changed, will be restarted\""
	}
	var missing []string
	for _, reason := range []string{"Pulled", "Created", "Started"} {
		found := false
		for _, e := range events {
			if e.Reason == reason && !eventTime(e).Before(killing) {
				found = true
			}
		}
		if !found {
			missing = append(missing, reason)
		}
	}
	if len(missing) > 0 {
		return "no " + strings.Join(missing, ", ") + " event since Killing"
	}
	return ""
}

func eventTime(e corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}
