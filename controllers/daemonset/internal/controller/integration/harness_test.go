// Package integration runs the real Advanced DaemonSet reconciler in-process
// (kit/testenv/lab) against the local control plane (kit/testenv:
// kube-apiserver, kube-scheduler, kube-controller-manager, kwok nodes and
// kubelets), one namespace and its own kwok nodes per test, and asserts what
// a user sees: pods per node, revisions and status.
package integration

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/daemonset/internal/app"
	"github.com/flotilla-dev/flotilla/controllers/daemonset/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// waitTimeout bounds every poll: pods need the scheduler and kwok.
const waitTimeout = 90 * time.Second

// Images the tests roll between; kwok never pulls them.
const (
	imageV1 = "registry.local/agent:v1"
	imageV2 = "registry.local/agent:v2"
)

type harness struct {
	*lab.Lab
	sets  *testenv.Objects[*appsv1alpha1.DaemonSet]
	gates map[featuregate.Feature]bool
	// nodeLabel=ns selects this test's nodes; a DaemonSet built by newDS
	// runs only there.
	nodeLabel string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout), gates: map[featuregate.Feature]bool{}, nodeLabel: "flotilla.dev/ds-test"}
	h.sets = testenv.ObjectsOf(t, h.Client.AppsV1alpha1().DaemonSets(h.NS), waitTimeout)
	h.sets.Describe = func(ds *appsv1alpha1.DaemonSet) string { return fmt.Sprintf("%+v", ds.Status) }
	return h
}

// start runs the reconciler over informers limited to the test's namespace
// (nodes are cluster-scoped: all of them) with the binary's gates as set in
// h.gates; the returned function stops it — aborting its in-flight requests,
// as a killed process would — and waits until it has (also done at cleanup).
func (h *harness) start() (stop func()) {
	h.T.Helper()
	d := h.Deps("daemonset-test", h.Gates(app.Gates(), h.gates))
	c, err := controller.New(d)
	require.NoError(h.T, err)
	return h.Start(c, 2, d)
}

// nodes creates n kwok nodes of this test (tainted for it, labelled
// nodeLabel=ns plus extra) and returns their names, sorted.
func (h *harness) nodes(n int, extra map[string]string) []string {
	l := map[string]string{h.nodeLabel: h.NS}
	for k, v := range extra {
		l[k] = v
	}
	names := h.Env.KwokNodes(h.T, h.NS, n, l)
	sort.Strings(names)
	return names
}

// newDS builds a DaemonSet of one container "main" running imageV1 on this
// test's nodes (nodeSelector nodeLabel=ns, toleration of the test taint).
func (h *harness) newDS(name string, mutate ...func(*appsv1alpha1.DaemonSet)) *appsv1alpha1.DaemonSet {
	ds := &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{h.nodeLabel: h.NS},
					Tolerations:  []corev1.Toleration{testenv.TestNodeToleration()},
					Containers:   []corev1.Container{{Name: "main", Image: imageV1}},
				},
			},
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

// place is how most tests begin: n nodes of this test, the reconciler
// started, DaemonSet newDS(name, mutate...) created and placed (waitPlaced);
// it returns the nodes and the pod on each.
func (h *harness) place(name string, n int, mutate ...func(*appsv1alpha1.DaemonSet)) ([]string, map[string]corev1.Pod) {
	h.T.Helper()
	nodes := h.nodes(n, nil)
	h.start()
	h.sets.Create(h.newDS(name, mutate...))
	return nodes, h.waitPlaced(name, nodes, "")
}

// pods lists the live pods of DaemonSet name, by name.
func (h *harness) pods(name string) []corev1.Pod { h.T.Helper(); return h.Pods("app=" + name) }

// byNode maps node → live pods of DaemonSet name targeting it.
func (h *harness) byNode(name string) map[string][]corev1.Pod { return byNode(h.pods(name)) }

func byNode(pods []corev1.Pod) map[string][]corev1.Pod {
	out := map[string][]corev1.Pod{}
	for _, p := range pods {
		n := nodeplacement.TargetNode(&p)
		out[n] = append(out[n], p)
	}
	return out
}

// waitPlaced waits until DaemonSet name runs exactly one Ready pod on each
// of nodes and none elsewhere, every pod bound where its affinity pins it
// and labelled with hash (if not empty).
func (h *harness) waitPlaced(name string, nodes []string, hash string) map[string]corev1.Pod {
	h.T.Helper()
	var got map[string]corev1.Pod
	h.WaitPods(func() []corev1.Pod { return h.pods(name) }, "pods of "+name+": one Ready pod on each of "+strings.Join(nodes, ","),
		func(pods []corev1.Pod) bool {
			by := byNode(pods)
			if len(by) != len(nodes) {
				return false
			}
			got = map[string]corev1.Pod{}
			for _, n := range nodes {
				ps := by[n]
				if len(ps) != 1 || !testenv.PodReady(&ps[0]) || ps[0].Spec.NodeName != n {
					return false
				}
				if hash != "" && ps[0].Labels[pub.ControllerRevisionHashLabelKey] != hash {
					return false
				}
				got[n] = ps[0]
			}
			return true
		})
	return got
}

// waitStatus waits until the DaemonSet's status satisfies cond at its
// current generation.
func (h *harness) waitStatus(name, what string, cond func(appsv1alpha1.DaemonSetStatus) bool) *appsv1alpha1.DaemonSet {
	h.T.Helper()
	return h.sets.WaitFor(name, what, func(ds *appsv1alpha1.DaemonSet) bool {
		return ds.Status.ObservedGeneration == ds.Generation && cond(ds.Status)
	})
}

// settled: every counter says n nodes all updated and available.
func settled(n int32) func(appsv1alpha1.DaemonSetStatus) bool {
	return func(s appsv1alpha1.DaemonSetStatus) bool {
		return s.DesiredNumberScheduled == n && s.CurrentNumberScheduled == n && s.NumberReady == n &&
			s.NumberAvailable == n && s.UpdatedNumberScheduled == n && s.NumberUnavailable == 0 && s.NumberMisscheduled == 0
	}
}

func names(pods []corev1.Pod) string { return strings.Join(testenv.PodNames(pods), ",") }

// setImage changes the template's container image.
func setImage(image string) func(*appsv1alpha1.DaemonSet) {
	return func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = image }
}

// rolling adjusts the rolling update parameters.
func rolling(mutate func(*appsv1alpha1.RollingUpdateDaemonSet)) func(*appsv1alpha1.DaemonSet) {
	return func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.Type = appsv1alpha1.RollingUpdateDaemonSetStrategyType
		if ds.Spec.UpdateStrategy.RollingUpdate == nil {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{}
		}
		mutate(ds.Spec.UpdateStrategy.RollingUpdate)
	}
}

// podWatcher sees every pod event of one DaemonSet from its start and
// checks an invariant over the pods per node after each; the first
// violation is kept.
type podWatcher struct {
	mu        sync.Mutex
	pods      map[string]*corev1.Pod // by name
	violation string
	events    int
}

func (h *harness) watchPods(name string, invariant func(byNode map[string][]*corev1.Pod) string) *podWatcher {
	h.T.Helper()
	list, wi := h.WatchPods("app=" + name)
	w := &podWatcher{pods: map[string]*corev1.Pod{}}
	for i := range list {
		w.pods[list[i].Name] = &list[i]
	}
	lab.ObservePods(wi, func(t watch.EventType, p *corev1.Pod) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.events++
		if t == watch.Deleted {
			delete(w.pods, p.Name)
		} else {
			w.pods[p.Name] = p
		}
		by := map[string][]*corev1.Pod{}
		for _, q := range w.pods {
			by[nodeplacement.TargetNode(q)] = append(by[nodeplacement.TargetNode(q)], q)
		}
		if v := invariant(by); v != "" && w.violation == "" {
			w.violation = v
		}
	})
	return w
}

func (w *podWatcher) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.violation, "invariant violated (after %d events)", w.events)
	assert.NotZero(t, w.events, "the watcher saw the update")
}

// unavailableNodes counts nodes without a Ready pod that is not being deleted.
func unavailableNodes(nodes []string, by map[string][]*corev1.Pod) int {
	n := 0
	for _, node := range nodes {
		ok := false
		for _, p := range by[node] {
			ok = ok || (p.DeletionTimestamp == nil && testenv.PodReady(p))
		}
		if !ok {
			n++
		}
	}
	return n
}

// hashes returns the revision hash of each node's pod.
func (h *harness) hashes(name string) map[string]string {
	out := map[string]string{}
	for n, ps := range h.byNode(name) {
		if len(ps) == 1 {
			out[n] = ps[0].Labels[pub.ControllerRevisionHashLabelKey]
		}
	}
	return out
}
