// Package integration runs the real CloneSet reconciler in-process against the
// local control plane (kit/testenv: kube-apiserver, kube-scheduler,
// kube-controller-manager, kwok nodes and kubelets), one namespace per test,
// and asserts what a user sees: pods, labels, PVCs, revisions and status.
package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/cloneset/internal/controller"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// waitTimeout bounds every poll: pods need the scheduler and kwok.
const waitTimeout = 90 * time.Second

// Images the tests roll between; kwok never pulls them.
const (
	imageV1 = "registry.local/app:v1"
	imageV2 = "registry.local/app:v2"
	imageV3 = "registry.local/app:v3"
)

type harness struct {
	*lab.Lab
	sets  *testenv.Objects[*appsv1alpha1.CloneSet]
	gates map[featuregate.Feature]bool
	// queueOptions and queueMetrics, if set, configure the next controller.
	queueOptions *kitcontroller.QueueOptions
	queueMetrics workqueue.MetricsProvider
	// ctrl is the running controller.
	ctrl *controller.Controller
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout), gates: map[featuregate.Feature]bool{}}
	h.sets = lab.Workloads(h.Lab, h.Client.AppsV1alpha1().CloneSets(h.NS), func(cs *appsv1alpha1.CloneSet) appsv1alpha1.CloneSetStatus { return cs.Status })
	return h
}

// startController runs the reconciler over informers limited to the test's
// namespace; the returned function stops it and waits until it has (also
// done at cleanup).
func (h *harness) startController() (stop func()) {
	h.T.Helper()
	d := h.Deps("cloneset-test", h.Gates(append(knownGates(), features.PreDownloadImageForInPlaceUpdate, features.KruiseDaemon), h.gates))
	d.QueueConfig = kitcontroller.QueueConfig{MetricsProvider: h.queueMetrics}
	if h.queueOptions != nil {
		d.QueueOptions = *h.queueOptions
	}
	c, err := controller.New(d)
	require.NoError(h.T, err)
	h.ctrl = c
	return h.Start(c, h.workers(), d)
}

func (h *harness) workers() int {
	if h.queueMetrics != nil {
		return 1
	}
	return 2
}

func knownGates() []featuregate.Feature {
	return []featuregate.Feature{
		features.CloneSetShortHash, features.CloneSetPartitionRollback, features.InPlaceUpdateEnvFromMetadata,
		features.RecreatePodWhenChangeVCTInCloneSetGate, features.PreparingUpdateAsUpdate,
	}
}

// newCloneSet builds a CloneSet of replicas pods running imageV1 in one
// container "main"; mutate adjusts it.
func newCloneSet(name string, replicas int32, mutate ...func(*appsv1alpha1.CloneSet)) *appsv1alpha1.CloneSet {
	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1alpha1.CloneSetSpec{Replicas: ptr.To(replicas), Selector: lab.Selector(name), Template: lab.Template(name, imageV1)},
	}
	for _, m := range mutate {
		m(cs)
	}
	return cs
}

// strategy sets the CloneSet's update strategy type.
func strategy(typ appsv1alpha1.CloneSetUpdateStrategyType) func(*appsv1alpha1.CloneSet) {
	return func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Type = typ }
}

// inPlacePartition: in-place updates where possible, holding back
// partition pods at the current revision.
func inPlacePartition(partition int32) func(*appsv1alpha1.CloneSet) {
	return func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(partition))
	}
}

// surgeFirst: rolling updates create maxSurge 1 new pod before deleting an
// old one, with maxUnavailable 0.
func surgeFirst(cs *appsv1alpha1.CloneSet) {
	cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
}

// neverReady makes kwok keep container "main" of every pod unready.
func neverReady(cs *appsv1alpha1.CloneSet) {
	cs.Spec.Template.Annotations = map[string]string{unreadyAnnotation: "main"}
}

// create, get and modify (retrying on conflict) go to the API server
// (kit/testenv.Objects).
func (h *harness) create(cs *appsv1alpha1.CloneSet) *appsv1alpha1.CloneSet {
	h.T.Helper()
	return h.sets.Create(cs)
}
func (h *harness) get(name string) *appsv1alpha1.CloneSet { h.T.Helper(); return h.sets.Get(name) }
func (h *harness) modify(name string, mutate func(*appsv1alpha1.CloneSet)) {
	h.T.Helper()
	h.sets.Modify(name, mutate)
}

// pods returns the CloneSet's live (not terminating) pods, by name.
func (h *harness) pods(name string) []corev1.Pod { h.T.Helper(); return h.Pods("app=" + name) }

// waitPods polls until cond holds for the CloneSet's live pods.
func (h *harness) waitPods(name, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	h.T.Helper()
	return h.WaitPods(func() []corev1.Pod { return h.pods(name) }, "pods of "+name+": "+what, cond)
}

// waitStatus polls until cond holds for the CloneSet's status of its
// current generation.
func (h *harness) waitStatus(name, what string, cond func(appsv1alpha1.CloneSetStatus) bool) *appsv1alpha1.CloneSet {
	h.T.Helper()
	return h.sets.WaitFor(name, what, func(cs *appsv1alpha1.CloneSet) bool {
		return cs.Status.ObservedGeneration == cs.Generation && cond(cs.Status)
	})
}

// allReady: n pods, all Running and Ready.
func allReady(n int) func([]corev1.Pod) bool {
	return func(pods []corev1.Pod) bool { return len(pods) == n && lab.RunningReady(pods) }
}

// settled: status shows n ready, available, updated replicas.
func settled(n int32) func(appsv1alpha1.CloneSetStatus) bool {
	return func(s appsv1alpha1.CloneSetStatus) bool {
		return s.Replicas == n && s.ReadyReplicas == n && s.AvailableReplicas == n && s.UpdatedReplicas == n &&
			s.UpdatedReadyReplicas == n && s.CurrentRevision == s.UpdateRevision
	}
}

// revisions returns the CloneSet's ControllerRevisions.
func (h *harness) revisions(cs *appsv1alpha1.CloneSet) []appsv1.ControllerRevision {
	h.T.Helper()
	return h.Revisions(cs.UID)
}

// waitEvent polls until an event with reason about the CloneSet exists.
func (h *harness) waitEvent(name, reason string) corev1.Event {
	h.T.Helper()
	return h.WaitEvent(name, reason)
}

// Shared pod helpers (kit/testenv).
var (
	podReady = testenv.PodReady
	names    = testenv.PodNames
	uids     = testenv.PodUIDs
)

func (h *harness) events(name string) []corev1.Event { return h.Events(name) }

func (h *harness) patchPod(name, patch string) { h.PatchPod(name, patch) }
