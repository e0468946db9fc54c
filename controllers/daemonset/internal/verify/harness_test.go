// Package verify checks the Advanced DaemonSet controller from the outside,
// on the local control plane (kit/testenv) and on kwok nodes the tests
// create for themselves: parity with kube-controller-manager's apps/v1
// DaemonSet on the same nodes, migration from apps/v1, and crash safety.
// The reconciler runs in-process (ours_test.go); the apps/v1 DaemonSets are
// served by the control plane's kube-controller-manager.
package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// waitTimeout bounds every poll: pods need the scheduler and kwok, on a
// machine shared with other test packages.
const waitTimeout = 2 * time.Minute

// Images the tests roll between; kwok never pulls them.
const (
	imageV1 = "registry.local/agent:v1"
	imageV2 = "registry.local/agent:v2"
	imageV3 = "registry.local/agent:v3"
)

// poolLabel is the node label the DaemonSets select on (value "in"): the
// scenarios "label a node out" by changing it.
const poolLabel = "flotilla.dev/ds-pool"

// revisionHashLabel is the pod and ControllerRevision label both
// controllers write (apps/v1 DefaultDaemonSetUniqueLabelKey).
const revisionHashLabel = "controller-revision-hash"

type harness struct {
	t      *testing.T
	env    *testenv.Env
	ns     string
	client versioned.Interface
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	t.Parallel()
	env := testenv.Get(t)
	return &harness{t: t, env: env, ns: env.Namespace(t), client: versioned.NewForConfigOrDie(env.Config)}
}

// another returns a harness on a second namespace of the same test.
func (h *harness) another() *harness {
	return &harness{t: h.t, env: h.env, ns: h.env.Namespace(h.t), client: h.client}
}

// fleet is a set of kwok nodes owned by one test: labelled
// poolLabel=in and TestNodeLabel=<owner>, tainted with the test-node taint
// (tolerated by the pods of template), deleted when the test ends.
type fleet struct {
	h     *harness
	owner string
	names []string
}

func (h *harness) newFleet(n int) *fleet {
	h.t.Helper()
	f := &fleet{h: h, owner: h.ns}
	f.add(n)
	return f
}

// add creates n more nodes and returns their names.
func (f *fleet) add(n int) []string {
	f.h.t.Helper()
	names := f.h.env.KwokNodes(f.h.t, f.owner, n, map[string]string{poolLabel: "in"})
	f.names = append(f.names, names...)
	return names
}

// template is the pod template of every DaemonSet here: it selects the
// fleet's nodes and tolerates their test taint, nothing else.
func (f *fleet) template(app, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{testenv.TestNodeLabel: f.owner, poolLabel: "in"},
			Tolerations:  []corev1.Toleration{testenv.TestNodeToleration()},
			Containers:   []corev1.Container{{Name: "main", Image: image}},
		},
	}
}

// label sets poolLabel on a node.
func (f *fleet) label(node, value string) {
	f.h.t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{poolLabel: value}}})
	require.NoError(f.h.t, err)
	_, err = f.h.env.Kube.CoreV1().Nodes().Patch(context.Background(), node, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	require.NoError(f.h.t, err, "label node %s", node)
}

// taint adds a taint no pod here tolerates.
func (f *fleet) taint(node string, effect corev1.TaintEffect) {
	f.h.t.Helper()
	nodes := f.h.env.Kube.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n = n.DeepCopy()
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "flotilla.dev/ds-verify", Value: strings.ToLower(string(effect)), Effect: effect})
		_, err = nodes.Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	require.NoError(f.h.t, err, "taint node %s", node)
}

// pods returns the namespace's live (not terminating) pods of app, by node.
func (h *harness) pods(app string) []corev1.Pod {
	h.t.Helper()
	list, err := h.env.Kube.CoreV1().Pods(h.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	require.NoError(h.t, err)
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return nodeOf(&out[i]) < nodeOf(&out[j]) })
	return out
}

// nodeOf is the node a daemon pod runs on or is meant for: its nodeName
// once bound, before that the node of its required node affinity
// (metadata.name In [node]), which both controllers write.
func nodeOf(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == metav1.ObjectNameField && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return "?"
}

// revisions maps each ControllerRevision hash of the namespace to its
// revision number, so that the two controllers' revisions, whose hashes
// differ (apps/v1 templates get server-side defaults), compare as r1, r2...
func (h *harness) revisions() map[string]int64 {
	h.t.Helper()
	list, err := h.env.Kube.AppsV1().ControllerRevisions(h.ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(h.t, err)
	out := map[string]int64{}
	for _, r := range list.Items {
		out[r.Labels[revisionHashLabel]] = r.Revision
	}
	return out
}

// layout describes the live pods as node=r<revision> (r? for a pod not
// Ready yet), nodes renamed to their index in names.
func (h *harness) layout(app string, names []string) string {
	h.t.Helper()
	revs := h.revisions()
	var parts []string
	for _, p := range h.pods(app) {
		rev := "?"
		if testenv.PodReady(&p) {
			rev = fmt.Sprintf("r%d", revs[p.Labels[revisionHashLabel]])
		}
		parts = append(parts, shortNode(names, nodeOf(&p))+"="+rev)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// shortNode names a node by its index in names (n0, n1, ...).
func shortNode(names []string, node string) string {
	for i, n := range names {
		if n == node {
			return fmt.Sprintf("n%d", i)
		}
	}
	return node
}

// watchFromNow lists app's pods and watches them from that list on (no
// ADDED events replayed for the pods that already exist). The watch resumes
// from the last event seen when the API server closes it (it does under
// load, for slow readers).
func (h *harness) watchFromNow(app string) ([]corev1.Pod, watch.Interface) {
	h.t.Helper()
	sel := "app=" + app
	pods := h.env.Kube.CoreV1().Pods(h.ns)
	list, err := pods.List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	require.NoError(h.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return pods.Watch(ctx, o)
		},
	})
	require.NoError(h.t, err)
	h.t.Cleanup(func() { w.Stop(); cancel() })
	return list.Items, w
}
