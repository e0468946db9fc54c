package integration

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Issue 23: CloneSets exactly as OpenKruise v1.9 leaves them (revisions with
// its names, hashes and data bytes; pods with its labels, annotations,
// readiness gates and conditions; PVCs; status) are taken over by Flotilla's
// controller without a rollout: no pod deleted, no pod spec changed, no
// label or annotation written, no new ControllerRevision, the status as
// OpenKruise wrote it. A partly rolled-out CloneSet (two revisions,
// partition) stays where OpenKruise left it. The same holds for revisions an
// older Flotilla wrote (the controller upgrade).
func TestTakeoverFromOpenKruise(t *testing.T) {
	h := newHarness(t)
	sets := []okSet{
		{name: "ok-conv", replicas: 3, images: []string{imageV1}, updated: 3, mutate: withVolume},
		{name: "ok-part", replicas: 4, images: []string{imageV1, imageV2}, updated: 2, mutate: func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
		}},
		{name: "fl-upgrade", replicas: 2, images: []string{imageV1, imageV2}, updated: 2, flotillaBefore: true},
	}
	states := map[string]okState{}
	watchers := map[string]*watcher{}
	for _, s := range sets {
		states[s.name] = h.applyOpenKruise(s)
		watchers[s.name] = h.watchInvariants(s.name, invariants{mayDelete: func(*corev1.Pod, int) bool { return false }})
	}
	revsBefore := h.Env.Kube.AppsV1().ControllerRevisions(h.NS)
	before, err := revsBefore.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)

	counter := &syncCounter{}
	h.queueMetrics = counter
	h.startController()
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		return expect(counter.syncs.Load() >= int64(len(sets)), "%d syncs", counter.syncs.Load())
	})
	// Whatever the controller would do, it does within a few syncs; watch
	// for longer than its requeues of the first pass.
	testenv.Consistently(t, 5*time.Second, func() error {
		for _, s := range sets {
			if n := len(watchers[s.name].deletedPods()); n > 0 {
				return fmt.Errorf("%s: %d pods deleted", s.name, n)
			}
		}
		return nil
	})

	after, err := revsBefore.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, revisionKeys(before.Items), revisionKeys(after.Items), "no ControllerRevision created, deleted or changed")

	for _, s := range sets {
		st, w := states[s.name], watchers[s.name]
		w.waitCaughtUp(h, s.name)
		w.check(t)
		assert.Empty(t, w.deletedPods(), "%s: pods deleted", s.name)
		live := h.pods(s.name)
		require.Len(t, live, int(s.replicas))
		for i, p := range live {
			was := st.pods[i]
			require.Equal(t, was.UID, p.UID, "%s: pod %s replaced", s.name, p.Name)
			assert.True(t, apiequality.Semantic.DeepEqual(was.Spec, p.Spec), "%s: pod %s spec changed", s.name, p.Name)
			assert.Equal(t, was.Labels, p.Labels, "%s: pod %s labels", s.name, p.Name)
			assert.Equal(t, was.Annotations, p.Annotations, "%s: pod %s annotations", s.name, p.Name)
			assert.Zero(t, metadataWrites(w.versions(p.Name)), "%s: label/annotation writes to pod %s", s.name, p.Name)
			assert.Equal(t, was.Status.ContainerStatuses[0].RestartCount, p.Status.ContainerStatuses[0].RestartCount)
		}
		cs := h.get(s.name)
		assert.Equal(t, statusCore(st.cs.Status), statusCore(cs.Status), "%s: status", s.name)
		// The one deliberate difference: Flotilla always maintains Progressing
		// (OpenKruise v1.9 only with progressDeadlineSeconds); its reason
		// must say the rollout stands where OpenKruise left it.
		for _, c := range cs.Status.Conditions {
			require.Equal(t, appsv1alpha1.CloneSetConditionTypeProgressing, c.Type, "%s: condition %+v", s.name, c)
			want := appsv1alpha1.CloneSetProgressAvailable
			if s.updated < s.replicas {
				want = appsv1alpha1.CloneSetProgressPartitionAvailable
			}
			assert.Equal(t, want, c.Reason, "%s: Progressing", s.name)
		}
	}
}

// revisionKeys identifies revisions by name, UID, .revision and data.
func revisionKeys(items []appsv1.ControllerRevision) map[string]string {
	out := map[string]string{}
	for _, r := range items {
		out[r.Name] = fmt.Sprintf("%s #%d %s", r.UID, r.Revision, r.Data.Raw)
	}
	return out
}

// metadataWrites counts the versions of a pod whose labels or annotations
// differ from the version before (the first observed is the baseline).
func metadataWrites(versions []*corev1.Pod) int {
	n := 0
	for i := 1; i < len(versions); i++ {
		if !maps.Equal(versions[i-1].Labels, versions[i].Labels) || !maps.Equal(versions[i-1].Annotations, versions[i].Annotations) {
			n++
		}
	}
	return n
}

// statusCore is the status without conditions (compared apart).
func statusCore(s appsv1alpha1.CloneSetStatus) appsv1alpha1.CloneSetStatus {
	s = *s.DeepCopy()
	s.Conditions = nil
	return s
}

// Issue 23: after the takeover, the first template change is an in-place
// update even with RecreatePodWhenChangeVCTInCloneSetGate on: the revision
// Flotilla creates carries OpenKruise's volumeClaimTemplates fingerprint, so
// the pods' (OpenKruise) revision and the new one agree the claims did not
// change.
func TestTakeoverThenUpdateInPlace(t *testing.T) {
	h := newHarness(t)
	h.gates[features.RecreatePodWhenChangeVCTInCloneSetGate] = true
	st := h.applyOpenKruise(okSet{name: "ok-vct", replicas: 2, images: []string{imageV1}, updated: 2, mutate: withVolume})
	w := h.watchInvariants("ok-vct", invariants{mayDelete: func(*corev1.Pod, int) bool { return false }})
	h.startController()
	h.modify("ok-vct", setImage(imageV2))
	pods := h.waitPods("ok-vct", "on v2", func(ps []corev1.Pod) bool { return len(ps) == 2 && allImage(ps, imageV2) })
	assert.Equal(t, uids(podPointers(st.pods)), uids(pods), "same pods, updated in place")
	w.check(t)
	assert.Empty(t, w.deletedPods())
}

func podPointers(ps []*corev1.Pod) []corev1.Pod {
	out := make([]corev1.Pod, 0, len(ps))
	for _, p := range ps {
		out = append(out, *p)
	}
	return out
}
