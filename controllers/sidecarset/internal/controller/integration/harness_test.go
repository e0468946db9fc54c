// Package integration runs the real SidecarSet reconciler in-process against
// the local control plane (kit/testenv), one namespace per test, and asserts
// what a user sees: pods (same UIDs, sidecar images, annotations,
// conditions), ControllerRevisions and SidecarSet status.
//
// Until the pod webhook is installed, pods are created as it would create
// them: sidecarcontrol.Inject builds them from the SidecarSet (and its
// ControllerRevisions). Each SidecarSet is scoped to its test's namespace
// (spec.namespace) and labelled for its test, and each test's controller only
// sees its own SidecarSets, so parallel tests do not meet.
package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/component-base/featuregate"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const waitTimeout = 90 * time.Second

// testLabel marks a test's SidecarSets; its controller watches only those.
const testLabel = "flotilla.dev/sidecarset-test"

type harness struct {
	*lab.Lab
	sets  *testenv.Objects[*appsv1alpha1.SidecarSet]
	gates map[string]bool
	// revNS is where the controller and the webhook keep SidecarSet
	// revisions and read kruise-configuration (--revision-namespace); the
	// test's namespace unless a test stands another in for kruise-system.
	revNS string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout), gates: map[string]bool{}}
	h.revNS = h.NS
	h.sets = testenv.ObjectsOf[*appsv1alpha1.SidecarSet](t, h.Client.AppsV1alpha1().SidecarSets(), waitTimeout)
	h.sets.Describe = func(s *appsv1alpha1.SidecarSet) string { return fmt.Sprintf("%+v", s.Status) }
	return h
}

// startController runs the reconciler with the test's namespace as its
// system namespace (revisions, configuration); the returned function stops it.
// Its pod informer keeps managedFields and it sees only the test's
// SidecarSets (cluster-scoped: selected by testLabel).
func (h *harness) startController() (stop func()) {
	h.T.Helper()
	gates := map[featuregate.Feature]bool{}
	for g, v := range h.gates {
		gates[featuregate.Feature(g)] = v
	}
	d := h.Deps("sidecarset-test", h.Gates([]featuregate.Feature{features.SidecarSetPatchPodMetadataDefaultsAllowed}, gates))
	d.KubeInformers = informers.NewSharedInformerFactoryWithOptions(h.Env.Kube, 0, informers.WithNamespace(h.NS))
	d.Informers = flotillainformers.NewSharedInformerFactoryWithOptions(h.Client, 0,
		flotillainformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = testLabel + "=" + h.NS }))
	c, err := controller.New(controller.Deps{SystemNamespace: h.revNS, Deps: d})
	require.NoError(h.T, err)
	return h.Start(c, 2, d)
}

// setName is unique across parallel tests (SidecarSets are cluster-scoped).
func (h *harness) setName(name string) string { return h.NS + "-" + name }

// newSet builds a SidecarSet selecting pods labelled app=<name> in the
// test's namespace, with one sidecar "side" on image.
func (h *harness) newSet(name, image string, mutate ...func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
	s := &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: h.setName(name), Labels: map[string]string{testLabel: h.NS}},
		Spec: appsv1alpha1.SidecarSetSpec{
			Namespace:  h.NS,
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Containers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "side", Image: image}}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func (h *harness) createSet(s *appsv1alpha1.SidecarSet) *appsv1alpha1.SidecarSet {
	h.T.Helper()
	out := h.sets.Create(s)
	h.T.Cleanup(func() {
		_ = h.Client.AppsV1alpha1().SidecarSets().Delete(context.Background(), s.Name, metav1.DeleteOptions{})
	})
	return out
}

// waitStatus waits for the SidecarSet's status to satisfy cond.
func (h *harness) waitStatus(name, what string, cond func(appsv1alpha1.SidecarSetStatus) bool) *appsv1alpha1.SidecarSet {
	h.T.Helper()
	return h.sets.WaitFor(h.setName(name), what, func(s *appsv1alpha1.SidecarSet) bool {
		return s.Status.ObservedGeneration == s.Generation && cond(s.Status)
	})
}

// createPods creates n pods labelled app=<name> (plus extra labels), with
// the sidecars the webhook would inject from the SidecarSet as stored now.
func (h *harness) createPods(name string, n int, extra map[string]string, annotations map[string]string) []*corev1.Pod {
	h.T.Helper()
	set := h.sets.Get(h.setName(name))
	revs, err := h.Env.Kube.AppsV1().ControllerRevisions(h.revNS).List(context.Background(), metav1.ListOptions{LabelSelector: sidecarcontrol.RevisionNameLabel + "=" + set.Name})
	require.NoError(h.T, err)
	var list sidecarcontrol.RevisionList
	for i := range revs.Items {
		list = append(list, &revs.Items[i])
	}
	var out []*corev1.Pod
	for i := range n {
		lbls := map[string]string{"app": name, "idx": fmt.Sprint(i)}
		for k, v := range extra {
			lbls[k] = v
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Namespace: h.NS, Labels: lbls, Annotations: annotations},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.local/app:v1"}}},
		}
		injected, _, err := sidecarcontrol.Inject(pod, []*appsv1alpha1.SidecarSet{set}, list, sidecarcontrol.Options{Now: time.Now()})
		require.NoError(h.T, err)
		created, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), injected, metav1.CreateOptions{})
		require.NoError(h.T, err)
		out = append(out, created)
	}
	return out
}

func (h *harness) pods(name string) []corev1.Pod { h.T.Helper(); return h.Pods("app=" + name) }

func (h *harness) waitPods(name, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	h.T.Helper()
	var last []corev1.Pod
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		last = h.pods(name)
		return cond(last), nil
	})
	if h.T.Failed() {
		h.T.Logf("%s: last pods %v", what, describePods(last))
	}
	return last
}

// setImage is `kubectl kruise set image sidecarset/<name> side=<image>`:
// a change of spec.containers[side].image.
func setImage(container, image string) func(*appsv1alpha1.SidecarSet) {
	return func(s *appsv1alpha1.SidecarSet) {
		for i := range s.Spec.Containers {
			if s.Spec.Containers[i].Name == container {
				s.Spec.Containers[i].Image = image
			}
		}
	}
}

func image(p *corev1.Pod, container string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}

func statusImage(p *corev1.Pod, container string) string {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}

func restarts(p *corev1.Pod, container string) int32 {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == container {
			return c.RestartCount
		}
	}
	return -1
}

// allOn: every pod's container runs image (spec and kubelet) and the pod is ready.
func allOn(n int, container, img string) func([]corev1.Pod) bool {
	return func(ps []corev1.Pod) bool {
		if len(ps) != n {
			return false
		}
		for i := range ps {
			if image(&ps[i], container) != img || statusImage(&ps[i], container) != img || !testenv.PodReady(&ps[i]) {
				return false
			}
		}
		return true
	}
}

func countOn(ps []corev1.Pod, container, img string) int {
	n := 0
	for i := range ps {
		if image(&ps[i], container) == img {
			n++
		}
	}
	return n
}

func allReady(n int) func([]corev1.Pod) bool {
	return func(ps []corev1.Pod) bool {
		return len(ps) == n && !slices.ContainsFunc(ps, func(p corev1.Pod) bool { return !testenv.PodReady(&p) })
	}
}

func describePods(ps []corev1.Pod) []string {
	var out []string
	for i := range ps {
		p := &ps[i]
		var cs []string
		for _, c := range p.Spec.Containers {
			cs = append(cs, fmt.Sprintf("%s=%s/%s", c.Name, c.Image, statusImage(p, c.Name)))
		}
		out = append(out, fmt.Sprintf("%s ready=%v %v", p.Name, testenv.PodReady(p), cs))
	}
	return out
}
