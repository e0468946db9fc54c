package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

const (
	// Set by hack/cluster/node-up.sh on every real node.
	realNodeLabel   = "flotilla.dev/real-node"
	registryAnnot   = "flotilla.dev/registry"
	inPlaceReady    = corev1.PodConditionType("InPlaceUpdateReady")
	envRequireNodes = "FLOTILLA_REAL_NODES"
)

// kwokOnlyRegistry names the images of the kwok half of a scenario when the cluster has no real node: kwok pulls
// nothing, so any registry name does.
const kwokOnlyRegistry = "127.0.0.1:5050"

// realNode returns the registry address (host:port) the real node pulls from, or "" when the cluster has no real
// node (failing the test instead when FLOTILLA_REAL_NODES says there must be one).
func realNode(t *testing.T, env *testenv.Env) string {
	t.Helper()
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: realNodeLabel + "=true"})
	require.NoError(t, err)
	for _, n := range nodes.Items {
		if reg := n.Annotations[registryAnnot]; reg != "" {
			return reg
		}
	}
	if v := os.Getenv(envRequireNodes); v != "" && v != "0" {
		t.Fatalf("%s=%s but the cluster has no node labelled %s=true with a %s annotation (start it with REAL_NODES=1)",
			envRequireNodes, v, realNodeLabel, registryAnnot)
	}
	return ""
}

// onEachNodeKind runs scenario on the real node and on the kwok nodes, as subtests "real" and "kwok". Without a real
// node only the kwok half runs (it checks that the stages do what the kubelet was seen doing), with image names of
// kwokOnlyRegistry.
func onEachNodeKind(t *testing.T, env *testenv.Env, scenario func(t *testing.T, registry string, kwok bool)) {
	registry := realNode(t, env)
	for _, k := range nodeKinds {
		t.Run(k.name, func(t *testing.T) {
			reg := registry
			if reg == "" {
				if !k.kwok {
					t.Skip("no real node in the cluster (REAL_NODES=1 hack/cluster/up.sh adds one)")
				}
				reg = kwokOnlyRegistry
			}
			scenario(t, reg, k.kwok)
		})
	}
}

// podTemplate is the pod template of the workloads under test: pinned to the real node, two containers that
// exit on SIGTERM (a shell as PID 1 ignores it otherwise, and every restart would wait for the grace period),
// an HTTP readiness probe on web and an exec one on side (true only in our images: FLOTILLA_IMAGE is set by
// their config). side's probe waits 2 s after a start: a kubelet publishes a restarted container once its PLEG
// relist (1 s) sees it, and a probe that has already passed by then makes it ready in that very status, so the
// unready step an in-place restart shows would otherwise be seen on some runs only.
//
// On kwok nodes (kwok=true: the same pods on the shared kwok nodes, for the side-by-side comparison) probes are
// not run and images are not pulled: kwok's stages play the kubelet.
func podTemplate(app, registry string, gate, kwok bool) string {
	gates := ""
	if gate {
		gates = "\n    readinessGates: [{conditionType: InPlaceUpdateReady}]"
	}
	tmpl := fmt.Sprintf(`
  metadata:
    labels: {app: %[1]s}
  spec:%[3]s
    %[5]s
    terminationGracePeriodSeconds: 10
    containers:
    - name: web
      image: %[2]s/flotilla/busybox:v1
      command: [sh, -c, 'trap "exit 0" TERM; httpd -f -p 8080 -h /www & wait']
      readinessProbe: {httpGet: {path: /index.html, port: 8080}, periodSeconds: 1}
    - name: side
      image: %[2]s/flotilla/busybox:v1
      command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']
      readinessProbe: {exec: {command: [sh, -c, 'test -n "$FLOTILLA_IMAGE"']}, initialDelaySeconds: 2, periodSeconds: 1}`, app, registry, gates, realNodeLabel, placement(kwok, "    "))
	return strings.ReplaceAll(tmpl, "\n", "\n  ") // under "spec.template:" of a workload
}

// statusStep is what a pod status says about readiness and the containers, one line per distinct value.
type statusStep struct {
	Generation                   int64  // metadata.generation: the spec change the node has to play
	Phase                        string // status.phase
	HostIP, PodIP                string
	Ready, ContainersReady, Gate string // condition statuses ("" when absent); Ready carries its reason
	ReadyToStart                 string // PodReadyToStartContainers
	ReadyBy                      string // field manager owning Ready's status (who wrote it last)
	Containers                   string // name:state/ready/restartCount/containerID suffix/image tag ...
}

// readyOwner is the field manager that owns status.conditions[type=Ready].status: on an update, ownership of a
// changed field moves to the writer, so this says whether the kubelet or a controller wrote the current value.
func readyOwner(p *corev1.Pod) string {
	for _, mf := range p.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var f map[string]any
		if json.Unmarshal(mf.FieldsV1.Raw, &f) != nil {
			continue
		}
		st, _ := f["f:status"].(map[string]any)
		conds, _ := st["f:conditions"].(map[string]any)
		ready, _ := conds[`k:{"type":"Ready"}`].(map[string]any)
		if _, ok := ready["f:status"]; ok {
			return mf.Manager
		}
	}
	return ""
}

func stepOf(p *corev1.Pod) statusStep {
	cond := func(t corev1.PodConditionType, withReason bool) string {
		for _, c := range p.Status.Conditions {
			if c.Type == t {
				if withReason && c.Reason != "" {
					return string(c.Status) + "(" + c.Reason + ")"
				}
				return string(c.Status)
			}
		}
		return ""
	}
	var cs []string
	for _, c := range p.Status.ContainerStatuses {
		id := c.ContainerID
		if len(id) > 6 {
			id = id[len(id)-6:]
		}
		state := "waiting"
		switch {
		case c.State.Waiting != nil:
			state = "waiting(" + c.State.Waiting.Reason + ")"
		case c.State.Running != nil:
			state = "running"
		case c.State.Terminated != nil:
			state = "terminated"
		}
		cs = append(cs, fmt.Sprintf("%s:%s/ready=%t/rc=%d/%s/%s", c.Name, state, c.Ready, c.RestartCount, id, c.Image[strings.LastIndex(c.Image, ":")+1:]))
	}
	return statusStep{Generation: p.Generation, Phase: string(p.Status.Phase), HostIP: p.Status.HostIP, PodIP: p.Status.PodIP,
		Ready: cond(corev1.PodReady, true), ContainersReady: cond(corev1.ContainersReady, false), Gate: cond(inPlaceReady, false),
		ReadyToStart: cond(corev1.PodReadyToStartContainers, false), ReadyBy: readyOwner(p), Containers: strings.Join(cs, " ")}
}

func (s statusStep) String() string {
	return fmt.Sprintf("gen=%d %s host=%s pod=%s ReadyToStart=%s Ready=%s (by %s) ContainersReady=%s InPlaceUpdateReady=%s %s",
		s.Generation, s.Phase, s.HostIP, s.PodIP, s.ReadyToStart, s.Ready, s.ReadyBy, s.ContainersReady, s.Gate, s.Containers)
}

// recorder keeps, per pod, the sequence of distinct status steps seen through an informer (no polling gaps), and
// when each was seen.
type recorder struct {
	mu    sync.Mutex
	steps map[types.UID][]statusStep
	at    map[types.UID][]time.Time
	// seen holds every resourceVersion the informer delivered, per pod.
	seen map[types.UID]map[string]bool
}

func record(t *testing.T, env *testenv.Env, ns string) *recorder {
	t.Helper()
	r := &recorder{steps: map[types.UID][]statusStep{}, at: map[types.UID][]time.Time{}, seen: map[types.UID]map[string]bool{}}
	framework.OnPods(t, env, ns, nil, func(p *corev1.Pod) {
		s := stepOf(p)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.seen[p.UID] == nil {
			r.seen[p.UID] = map[string]bool{}
		}
		r.seen[p.UID][p.ResourceVersion] = true
		if seq := r.steps[p.UID]; len(seq) == 0 || seq[len(seq)-1] != s {
			r.steps[p.UID] = append(seq, s)
			r.at[p.UID] = append(r.at[p.UID], time.Now())
		}
	})
	return r
}

// caughtUp waits until the informer has delivered pod p as a List returned it. A watch lags behind a List (by
// hundreds of milliseconds on a loaded CI machine): without this the last recorded step can be older than the pod
// the test just checked. A watch delivers every version in order, so having seen p's version means having seen all
// before it.
func (r *recorder) caughtUp(t *testing.T, p *corev1.Pod) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.seen[p.UID][p.ResourceVersion], nil
	})
}

func (r *recorder) of(uid types.UID) []statusStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]statusStep(nil), r.steps[uid]...)
}

// firstAt returns the index and arrival time of pod uid's first step that satisfies match (-1 when none).
func (r *recorder) firstAt(uid types.UID, match func(statusStep) bool) (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range r.steps[uid] {
		if match(s) {
			return i, r.at[uid][i]
		}
	}
	return -1, time.Time{}
}

// logSteps logs pod uid's status sequence, with each step's time since from.
func (r *recorder) logSteps(t *testing.T, name string, uid types.UID, from time.Time) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range r.steps[uid] {
		t.Logf("%s step %d (%+.2f s): %s", name, i, r.at[uid][i].Sub(from).Seconds(), s)
	}
}

// containerByName returns the status of container name (zero value when absent).
func containerByName(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	return corev1.ContainerStatus{}
}

// allOnImage is an Eventually condition: n pods with selector, all Ready, running side's status image tag.
func allOnImage(t *testing.T, env *testenv.Env, ns, selector, image string, n int) func() (bool, error) {
	return func() (bool, error) {
		list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		ok := 0
		for i := range list.Items {
			p := &list.Items[i]
			side := containerByName(p, "side")
			if testenv.PodReady(p) && p.DeletionTimestamp == nil && side.Image == image && side.Ready && side.State.Running != nil &&
				testenv.ConditionStatus(p, inPlaceReady) != corev1.ConditionFalse {
				ok++
			}
		}
		return ok == n && len(list.Items) == n, nil
	}
}

const startTimeout = 2 * time.Minute

// barePod decodes a pod manifest (fmt.Sprintf of format and args), rejecting unknown fields.
func barePod(t *testing.T, format string, args ...any) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(format, args...)), pod))
	return pod
}

// placement is the pod spec's node selection: the real node (label + toleration of its taint) or the shared kwok
// nodes.
// indent is the indentation of the pod spec's fields.
func placement(kwok bool, indent string) string {
	if kwok {
		return "nodeSelector: {type: kwok}"
	}
	return fmt.Sprintf("nodeSelector: {%[1]s: \"true\"}\n%[2]stolerations: [{key: %[1]s, operator: Exists, effect: NoSchedule}]", realNodeLabel, indent)
}

// nodeKinds are the subtests of a scenario: on the real node, and the same on kwok nodes, whose status
// sequence is logged beside the kubelet's (README: kwok differences).
var nodeKinds = []struct {
	name string
	kwok bool
}{{"real", false}, {"kwok", true}}
