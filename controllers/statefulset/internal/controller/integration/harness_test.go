// Package integration runs the real Advanced StatefulSet reconciler
// in-process against the local control plane (kit/testenv: kube-apiserver,
// kube-scheduler, kube-controller-manager, kwok nodes and kubelets), one
// namespace per test, and asserts what a user sees: pods, claims, revisions
// and status.
package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/controllers/statefulset/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// waitTimeout bounds every poll: pods need the scheduler and kwok.
const waitTimeout = 90 * time.Second

// Images the tests roll between; kwok never pulls them.
const (
	imageV1 = "registry.local/db:v1"
	imageV2 = "registry.local/db:v2"
)

type harness struct {
	*lab.Lab
	sets  *testenv.Objects[*appsv1beta1.StatefulSet]
	gates map[featuregate.Feature]bool
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout), gates: map[featuregate.Feature]bool{}}
	h.sets = lab.Workloads(h.Lab, h.Client.AppsV1beta1().StatefulSets(h.NS), func(set *appsv1beta1.StatefulSet) appsv1beta1.StatefulSetStatus { return set.Status })
	return h
}

// startController runs the reconciler over informers limited to the test's
// namespace; the returned function stops it and waits until it has (also
// done at cleanup).
func (h *harness) startController() (stop func()) {
	h.T.Helper()
	d := h.Deps("statefulset-test", h.Gates([]featuregate.Feature{features.StatefulSetAutoDeletePVC, features.StatefulSetStartOrdinal,
		features.PodIndexLabel, features.InPlaceUpdateEnvFromMetadata, features.PreDownloadImageForInPlaceUpdate, features.KruiseDaemon}, h.gates))
	c, err := controller.New(d)
	require.NoError(h.T, err)
	return h.Start(c, 2, d)
}

// newSet builds a StatefulSet of replicas pods running imageV1 in one
// container "main"; mutate adjusts it.
func newSet(name string, replicas int32, mutate ...func(*appsv1beta1.StatefulSet)) *appsv1beta1.StatefulSet {
	set := &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas: ptr.To(replicas), ServiceName: name, Selector: lab.Selector(name), Template: lab.Template(name, imageV1),
		},
	}
	for _, m := range mutate {
		m(set)
	}
	return set
}

func parallel(set *appsv1beta1.StatefulSet) {
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
}

// withClaim adds volumeClaimTemplate "data" mounted by the container.
func withClaim(set *appsv1beta1.StatefulSet) {
	lab.SetDataClaim(&set.Spec.VolumeClaimTemplates, &set.Spec.Template.Spec.Containers[0])
}

func rolling(mutate func(*appsv1beta1.RollingUpdateStatefulSetStrategy)) func(*appsv1beta1.StatefulSet) {
	return func(set *appsv1beta1.StatefulSet) {
		if set.Spec.UpdateStrategy.RollingUpdate == nil {
			set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{}
		}
		mutate(set.Spec.UpdateStrategy.RollingUpdate)
	}
}

// create, get and modify (retrying on conflict) go to the API server
// (kit/testenv.Objects).
func (h *harness) create(set *appsv1beta1.StatefulSet) *appsv1beta1.StatefulSet {
	h.T.Helper()
	return h.sets.Create(set)
}

func (h *harness) get(name string) *appsv1beta1.StatefulSet {
	h.T.Helper()
	return h.sets.Get(name)
}

func (h *harness) modify(name string, mutate func(*appsv1beta1.StatefulSet)) {
	h.T.Helper()
	h.sets.Modify(name, mutate)
}

func setImage(image string) func(*appsv1beta1.StatefulSet) {
	return func(set *appsv1beta1.StatefulSet) { set.Spec.Template.Spec.Containers[0].Image = image }
}

// pods returns the set's live (not terminating) pods, by ordinal.
func (h *harness) pods(name string) []corev1.Pod {
	h.T.Helper()
	out := h.Pods("app=" + name)
	sort.Slice(out, func(i, j int) bool { return ordinal(out[i].Name) < ordinal(out[j].Name) })
	return out
}

func ordinal(name string) int {
	var n int
	fmt.Sscanf(name[strings.LastIndex(name, "-")+1:], "%d", &n)
	return n
}

// waitPods polls until cond holds for the set's live pods.
func (h *harness) waitPods(name, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	h.T.Helper()
	return h.WaitPods(func() []corev1.Pod { return h.pods(name) }, "pods of "+name+": "+what, cond)
}

// waitStatus polls until cond holds for the set's observed status.
func (h *harness) waitStatus(name, what string, cond func(appsv1beta1.StatefulSetStatus) bool) *appsv1beta1.StatefulSet {
	h.T.Helper()
	return h.sets.WaitFor(name, what, func(set *appsv1beta1.StatefulSet) bool {
		return set.Status.ObservedGeneration == set.Generation && cond(set.Status)
	})
}

// readyNames: exactly these pods, all Running and Ready.
func readyNames(want ...string) func([]corev1.Pod) bool {
	return func(pods []corev1.Pod) bool {
		return equalStrings(names(pods), want) && lab.RunningReady(pods)
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}

// settled: status shows n ready, updated replicas and a completed rollout.
func settled(n int32) func(appsv1beta1.StatefulSetStatus) bool {
	return func(s appsv1beta1.StatefulSetStatus) bool {
		return s.Replicas == n && s.ReadyReplicas == n && s.AvailableReplicas == n && s.UpdatedReplicas == n &&
			s.CurrentReplicas == n && s.CurrentRevision == s.UpdateRevision
	}
}

// claim returns the named PVC, or nil if it does not exist.
func (h *harness) claim(name string) *corev1.PersistentVolumeClaim {
	h.T.Helper()
	pvc, err := h.Env.Kube.CoreV1().PersistentVolumeClaims(h.NS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return pvc
}

// onPodEvents calls observe, from a goroutine of its own, with every event
// of the set's pods from now on (lab.WatchPods: no ADDED events replayed
// for the pods that already exist; resumed when the server closes the watch).
func (h *harness) onPodEvents(name string, observe func(watch.EventType, *corev1.Pod)) {
	h.T.Helper()
	_, w := h.WatchPods("app=" + name)
	lab.ObservePods(w, observe)
}

// Shared pod helpers (kit/testenv).
var (
	podReady = testenv.PodReady
	names    = testenv.PodNames
	uids     = testenv.PodUIDs
)

func (h *harness) events(name string) []corev1.Event { return h.Events(name) }

func (h *harness) patchPod(name, patch string) { h.PatchPod(name, patch) }
