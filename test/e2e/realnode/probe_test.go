package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// The PodProbeMarker tests run the built probe-controller and probe-agent binaries (as their ServiceAccounts) for
// the real node, the agent's exec probes going to the node's containerd through its CRI socket. They are not
// parallel: each starts the agent of that node, and a node has one agent.

const (
	idleLabel     = "gameserver-idle"
	deletionCost  = "controller.kubernetes.io/pod-deletion-cost"
	idleCondition = corev1.PodConditionType("game.io/idle")
	// idleCheck is the Idle probe's command: idle while /state/<hostname> exists (the test's directory on the host,
	// a hostPath volume, one file per pod name); otherwise the reason on stderr, with the container's hostname
	// (the pod's name), which only a command run inside that pod's container can know.
	idleCheck = `test -f "/state/$(hostname)" || { echo "players connected on $(hostname)" >&2; exit 1; }`
)

// probeNode returns the real node's name and its containerd's CRI endpoint, skipping (or failing, see realNode)
// when the cluster has none. hack/cluster/node-up.sh puts real node i's socket at
// $CLUSTER_DIR/data/nodes/<i>/containerd.sock; $CLUSTER_DIR is the kubeconfig's directory for a shared cluster.
func probeNode(t *testing.T, env *testenv.Env) (node, registry, endpoint string) {
	t.Helper()
	registry = realNode(t, env)
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: realNodeLabel + "=true"})
	require.NoError(t, err)
	dir := env.ClusterDir
	if dir == "" {
		dir = filepath.Dir(env.KubeconfigPath)
	}
	for _, n := range nodes.Items {
		i, ok := strings.CutPrefix(n.Name, "real-node-")
		if !ok || n.Annotations[registryAnnot] != registry {
			continue
		}
		sock := filepath.Join(dir, "data", "nodes", i, "containerd.sock")
		if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return n.Name, registry, "unix://" + sock
		}
		t.Fatalf("real node %s has no containerd socket at %s (is the cluster on this host?)", n.Name, sock)
	}
	t.Fatalf("no real node named real-node-<i> with registry %s", registry)
	return "", "", ""
}

// startProbeStack runs probe-controller (scoped to ns, with the KruiseDaemon gate PodProbeMarker needs) and the
// node's probe-agent (exec through endpoint), and removes the node's NodePodProbe once both have stopped: it
// lists only this test's pods, and no agent is left to probe them.
func startProbeStack(t *testing.T, env *testenv.Env, ns, node, endpoint string) {
	t.Helper()
	client := versioned.NewForConfigOrDie(env.Config)
	t.Cleanup(func() {
		err := client.AppsV1alpha1().NodePodProbes().Delete(context.Background(), node, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete NodePodProbe %s: %v", node, err)
		}
	})
	framework.StartScoped(t, env, "probe", ns, "--feature-gates=KruiseDaemon=true")
	agent := framework.Start(t, framework.CommandBinary(t, env, "probe", "probe-agent"),
		"--kubeconfig="+framework.AgentKubeconfig(t, env, node),
		"--node-name="+node, "--cri-socket="+endpoint, "--log-format=console")
	testenv.Eventually(t, time.Minute, func() (bool, error) { return agent.Status("/readyz") == 200 || !agent.Running(), nil })
	require.True(t, agent.Running(), "probe-agent exited:\n%s", agent.Log())
}

// gameServerMarker is deploy/samples/podprobemarker.yaml (the seed's marker) in ns, its Idle probe running
// idleCheck every second from one second after the container started, one result enough to change state.
func gameServerMarker(t *testing.T, ns string) *appsv1alpha1.PodProbeMarker {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "../../../deploy/samples/podprobemarker.yaml"))
	require.NoError(t, err)
	ppm := &appsv1alpha1.PodProbeMarker{}
	require.NoError(t, yaml.UnmarshalStrict(raw, ppm))
	ppm.Namespace = ns
	require.Len(t, ppm.Spec.Probes, 1)
	p := &ppm.Spec.Probes[0].Probe
	p.Exec.Command = []string{"sh", "-c", idleCheck}
	p.InitialDelaySeconds, p.PeriodSeconds, p.FailureThreshold = 1, 1, 1
	return ppm
}

// gameServerSpec is the pod spec of a game server on the real node (fields indented by indent), with the host
// directory stateDir at /state.
//
// The test switches a pod between idle and busy through that directory rather than `kubectl exec`: the API server
// of the local cluster dials a kubelet by its node name, which does not resolve here (exec and logs fail with
// "dial tcp: lookup real-node-0 ... no such host").
func gameServerSpec(registry, stateDir, indent string) string {
	return strings.ReplaceAll(fmt.Sprintf(`%s
terminationGracePeriodSeconds: 10
volumes: [{name: state, hostPath: {path: %q, type: Directory}}]
containers:
- name: game-server
  image: %s/flotilla/busybox:v1
  command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']
  volumeMounts: [{name: state, mountPath: /state, readOnly: true}]`, placement(false, ""), stateDir, registry), "\n", "\n"+indent)
}

// setIdle makes pod's Idle probe succeed (idle) or fail from its next run.
func setIdle(t *testing.T, stateDir, pod string, idle bool) {
	t.Helper()
	path := filepath.Join(stateDir, pod)
	if idle {
		require.NoError(t, os.WriteFile(path, nil, 0o644))
	} else {
		require.NoError(t, os.Remove(path))
	}
}

// marking is what the probe's results put on a pod.
type marking struct {
	Label, Cost, Condition, Message string
}

func markingOf(p *corev1.Pod) marking {
	m := marking{Label: p.Labels[idleLabel], Cost: p.Annotations[deletionCost]}
	for _, c := range p.Status.Conditions {
		if c.Type == idleCondition {
			m.Condition, m.Message = string(c.Status), c.Message
		}
	}
	return m
}

var (
	idle = marking{Label: "true", Cost: "-10", Condition: "True"}
	busy = func(pod string) marking {
		return marking{Label: "false", Cost: "10", Condition: "False", Message: "players connected on " + pod}
	}
)

// waitMarked polls pod until its marking is want, logging each marking it sees on the way.
func waitMarked(t *testing.T, env *testenv.Env, ns, pod string, want marking) {
	t.Helper()
	var last *marking
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got := markingOf(p)
		if last == nil || *last != got {
			t.Logf("pod %s: %+v", pod, got)
			last = &got
		}
		return got == want, nil
	})
}

// TestExecProbeOnRealNode: an exec probe of a PodProbeMarker runs in the pod's container on the real node, through
// containerd's CRI ExecSync: Succeeded while the command succeeds (the seed's Succeeded labels, annotations and a
// True condition on the pod), Failed with the command's stderr as the condition's message once it fails, and
// Succeeded again. The command's result follows a file the test writes into a host directory the container
// mounts, and the message carries the container's hostname: the agent's ExecSync ran in that very container.
func TestExecProbeOnRealNode(t *testing.T) {
	env := testenv.Get(t)
	node, registry, endpoint := probeNode(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	client := versioned.NewForConfigOrDie(env.Config)
	startProbeStack(t, env, ns, node, endpoint)

	stateDir := t.TempDir()
	setIdle(t, stateDir, "game", true)
	pod := &corev1.Pod{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: game, labels: {app: game-server}}
spec:
  `+gameServerSpec(registry, stateDir, "  ")), pod))
	pod, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.AppsV1alpha1().PodProbeMarkers(ns).Create(ctx, gameServerMarker(t, ns), metav1.CreateOptions{})
	require.NoError(t, err)

	t.Log("idle from the start: Succeeded")
	waitMarked(t, env, ns, pod.Name, idle)
	p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, node, p.Spec.NodeName)
	require.True(t, strings.HasPrefix(containerByName(p, "game-server").ContainerID, "containerd://"),
		"the container runs in containerd: %s", containerByName(p, "game-server").ContainerID)

	t.Log("a match starts: Failed, stderr in the condition")
	setIdle(t, stateDir, pod.Name, false)
	waitMarked(t, env, ns, pod.Name, busy(pod.Name))

	t.Log("the match ends: Succeeded again")
	setIdle(t, stateDir, pod.Name, true)
	waitMarked(t, env, ns, pod.Name, idle)

	npp, err := client.AppsV1alpha1().NodePodProbes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	var states []string
	for _, ps := range npp.Status.PodProbeStatuses {
		if ps.UID == string(pod.UID) {
			for _, s := range ps.ProbeStates {
				states = append(states, s.Name+"="+string(s.State))
			}
		}
	}
	assert.Equal(t, []string{"game-server-probe#Idle=Succeeded"}, states, "NodePodProbe %s status", node)
}

// TestGameServerScaleInOnRealNode is the seed's game-server scenario end to end: a CloneSet of 4 game servers on
// the real node, the seed's PodProbeMarker (deploy/samples/podprobemarker.yaml) with an exec Idle probe; the two
// pods that become idle get gameserver-idle=true and pod-deletion-cost -10, the busy ones gameserver-idle=false
// and 10 (with the probe's stderr in the game.io/idle condition). Scaling the CloneSet to 2 deletes exactly the
// idle pods. They are chosen as the two pods the CloneSet would keep without deletion costs, so only the costs
// the probe wrote can make it delete them.
func TestGameServerScaleInOnRealNode(t *testing.T) {
	env := testenv.Get(t)
	node, registry, endpoint := probeNode(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	client := versioned.NewForConfigOrDie(env.Config)
	framework.StartScoped(t, env, "cloneset", ns)
	startProbeStack(t, env, ns, node, endpoint)

	stateDir := t.TempDir()
	cs := &appsv1alpha1.CloneSet{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: game-server}
spec:
  replicas: 4
  selector: {matchLabels: {app: game-server}}
  template:
    metadata: {labels: {app: game-server}}
    spec:
      `+gameServerSpec(registry, stateDir, "      ")), cs))
	_, err := client.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.AppsV1alpha1().PodProbeMarkers(ns).Create(ctx, gameServerMarker(t, ns), metav1.CreateOptions{})
	require.NoError(t, err)

	list := func() []corev1.Pod { return framework.Pods(t, env, ns, "app=game-server") }
	t.Log("4 game servers, all busy")
	testenv.Eventually(t, startTimeout, func() (bool, error) {
		pods := list()
		marked := 0
		for i := range pods {
			if testenv.PodReady(&pods[i]) && markingOf(&pods[i]) == busy(pods[i].Name) {
				marked++
			}
		}
		return len(pods) == 4 && marked == 4, nil
	})

	// The CloneSet's scale-in order (kit/podutil) with every pod at the same cost: the last two are the ones it
	// would keep; they become idle.
	pods := list()
	ptrs := make([]*corev1.Pod, len(pods))
	for i := range pods {
		ptrs[i] = &pods[i]
	}
	order := podutil.SortForDeletion(ptrs, podutil.RankBySameNode(ptrs), time.Now())
	idlePods := map[types.UID]string{}
	busyPods := map[types.UID]string{}
	for i, p := range order {
		if i >= 2 {
			idlePods[p.UID] = p.Name
		} else {
			busyPods[p.UID] = p.Name
		}
	}
	t.Logf("idle: %v, busy: %v", idlePods, busyPods)
	for _, name := range idlePods {
		setIdle(t, stateDir, name, true)
	}
	for _, name := range idlePods {
		waitMarked(t, env, ns, name, idle)
	}
	for _, name := range busyPods {
		waitMarked(t, env, ns, name, busy(name))
	}

	t.Log("scale in to 2: the idle pods go")
	_, err = client.AppsV1alpha1().CloneSets(ns).Patch(ctx, "game-server", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, startTimeout, func() (bool, error) {
		pods := list()
		for _, p := range pods {
			if _, isIdle := idlePods[p.UID]; isIdle {
				return false, nil
			}
			// Fail at once: a busy pod deleted (or a pod created) is the bug, not a slow step.
			if _, isBusy := busyPods[p.UID]; !isBusy || p.DeletionTimestamp != nil {
				t.Fatalf("scale-in touched pod %s (deleting: %t), not one of the idle pods %v", p.Name, p.DeletionTimestamp != nil, idlePods)
			}
		}
		return len(pods) == 2, nil
	})
	for _, p := range list() {
		assert.Equal(t, busy(p.Name), markingOf(&p), "busy pod %s kept with its marking", p.Name)
	}
	got, err := client.AppsV1alpha1().CloneSets(ns).Get(ctx, "game-server", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), got.Status.Replicas)
}
