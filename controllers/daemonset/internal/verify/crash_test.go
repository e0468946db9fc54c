package verify

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const crashNodes = 20

// crashLoop kills the reconciler (lab.KillWhen: its context cancelled,
// in-flight requests aborted, caches, expectations and queue discarded) once
// progress reaches each threshold, and starts a fresh one.
func (h *harness) crashLoop(stop *func(), thresholds []int, progress func([]corev1.Pod) int) {
	h.T.Helper()
	for _, n := range thresholds {
		h.KillWhen(fmt.Sprintf("at progress %d", n), func() bool { return progress(h.pods(parityApp)) >= n },
			stop, func() func() { return startOurs(h) })
	}
}

// readyOn counts the Ready pods running image.
func readyOn(image string) func([]corev1.Pod) int {
	return func(ps []corev1.Pod) int {
		n := 0
		for i := range ps {
			if ps[i].Spec.Containers[0].Image == image && testenv.PodReady(&ps[i]) {
				n++
			}
		}
		return n
	}
}

// settledOn waits until every node of the fleet runs one Ready pod of image
// and the status says so.
func (h *harness) settledOn(f *fleet, image string) {
	h.T.Helper()
	n := int32(len(f.names))
	want := dsStatus{n, n, 0, n, n, n, 0, true}
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		pods := h.pods(parityApp)
		if got := readyOn(image)(pods); got != len(f.names) || len(pods) != len(f.names) {
			return false, fmt.Errorf("%d pods, %d Ready on %s, want %d", len(pods), got, image, n)
		}
		if st := (oursDS{h}).status(); st != want {
			return false, fmt.Errorf("status %v observed %v, want %v", st, st.Observed, want)
		}
		return true, nil
	})
}

// crashRollout creates an Advanced DaemonSet over crashNodes nodes with the
// given budgets, rolls it to imageV2 while killing and restarting the
// reconciler, and checks the budgets at every pod event until the rollout
// has completed.
func crashRollout(t *testing.T, maxUnavailable, maxSurge int32) {
	h := newHarness(t)
	f := h.newFleet(crashNodes)
	stop := startOurs(h)
	tmpl := f.template(parityApp, imageV1)
	unav, surge := intstr.FromInt32(maxUnavailable), intstr.FromInt32(maxSurge)
	ds := &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: parityApp},
		Spec: appsv1alpha1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl,
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{Type: appsv1alpha1.StandardRollingUpdateType, MaxUnavailable: &unav, MaxSurge: &surge}}},
	}
	_, err := h.Client.AppsV1alpha1().DaemonSets(h.NS).Create(context.Background(), ds, metav1.CreateOptions{})
	require.NoError(t, err)
	h.settledOn(f, imageV1)

	w := h.watchPods(parityApp)
	w.enforce(h, parityApp, f.names, int(maxSurge), int(maxUnavailable))
	testenv.ObjectsOf(t, h.Client.AppsV1alpha1().DaemonSets(h.NS), waitTimeout).Modify(parityApp, func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Image = imageV2
	})
	h.crashLoop(&stop, []int{3, 8, 13, 17}, readyOn(imageV2))
	h.settledOn(f, imageV2)
	testenv.Eventually(t, waitTimeout, func() (bool, error) { err := w.caughtUp(h, parityApp); return err == nil, err })
	p, violations := w.relax()
	assert.Empty(t, violations)
	t.Log(p)
	if maxSurge > 0 {
		assert.Equal(t, int(maxSurge), p.surging, "the surge budget was used")
	} else {
		assert.Equal(t, int(maxUnavailable), p.unavailable, "the unavailability budget was used")
	}
}

// TestCrashSafetyMaxUnavailable: a rolling update with maxUnavailable 3 over
// 20 nodes, the reconciler killed and restarted four times on the way: at
// every pod event at most one pod per node and at most three nodes without
// an available pod; the update completes.
func TestCrashSafetyMaxUnavailable(t *testing.T) { crashRollout(t, 3, 0) }

// TestCrashSafetyMaxSurge: the same with maxSurge 2 and maxUnavailable 0: at
// most two pods per node and two nodes with two live pods, never a node
// without an available pod.
func TestCrashSafetyMaxSurge(t *testing.T) { crashRollout(t, 0, 2) }
