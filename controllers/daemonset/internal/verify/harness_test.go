// Package verify checks the Advanced DaemonSet controller from the outside,
// on the local control plane (kit/testenv) and on kwok nodes the tests
// create for themselves: parity with kube-controller-manager's apps/v1
// DaemonSet on the same nodes, migration from apps/v1, and crash safety.
// The reconciler runs in-process (ours_test.go); the apps/v1 DaemonSets are
// served by the control plane's kube-controller-manager.
package verify

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
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

type harness struct{ *lab.Lab }

func newHarness(t *testing.T) *harness {
	t.Helper()
	return &harness{lab.New(t, waitTimeout)}
}

// another returns a harness on a second namespace of the same test.
func (h *harness) another() *harness { return &harness{h.Another()} }

// fleet is a set of kwok nodes owned by one test: labelled
// poolLabel=in and TestNodeLabel=<owner>, tainted with the test-node taint
// (tolerated by the pods of template), deleted when the test ends.
type fleet struct {
	h     *harness
	owner string
	names []string
}

func (h *harness) newFleet(n int) *fleet {
	h.T.Helper()
	f := &fleet{h: h, owner: h.NS}
	f.add(n)
	return f
}

// add creates n more nodes and returns their names.
func (f *fleet) add(n int) []string {
	f.h.T.Helper()
	names := f.h.Env.KwokNodes(f.h.T, f.owner, n, map[string]string{poolLabel: "in"})
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
	f.h.T.Helper()
	f.h.Nodes().Modify(node, func(n *corev1.Node) { n.Labels[poolLabel] = value })
}

// taint adds a taint no pod here tolerates.
func (f *fleet) taint(node string, effect corev1.TaintEffect) {
	f.h.T.Helper()
	f.h.Nodes().Modify(node, func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "flotilla.dev/ds-verify", Value: strings.ToLower(string(effect)), Effect: effect})
	})
}

// pods returns the namespace's live (not terminating) pods of app, by node.
func (h *harness) pods(app string) []corev1.Pod {
	h.T.Helper()
	out := h.Pods("app=" + app)
	sort.Slice(out, func(i, j int) bool { return nodeplacement.TargetNode(&out[i]) < nodeplacement.TargetNode(&out[j]) })
	return out
}

// revisions maps each ControllerRevision hash of the namespace to its
// revision number, so that the two controllers' revisions, whose hashes
// differ (apps/v1 templates get server-side defaults), compare as r1, r2...
func (h *harness) revisions() map[string]int64 {
	h.T.Helper()
	list, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(h.T, err)
	out := map[string]int64{}
	for _, r := range list.Items {
		out[r.Labels[revisionHashLabel]] = r.Revision
	}
	return out
}

// layout describes the live pods as node=r<revision> (r? for a pod not
// Ready yet), nodes renamed to their index in names.
func (h *harness) layout(app string, names []string) string {
	h.T.Helper()
	revs := h.revisions()
	var parts []string
	for _, p := range h.pods(app) {
		rev := "?"
		if testenv.PodReady(&p) {
			rev = fmt.Sprintf("r%d", revs[p.Labels[revisionHashLabel]])
		}
		parts = append(parts, shortNode(names, nodeplacement.TargetNode(&p))+"="+rev)
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
