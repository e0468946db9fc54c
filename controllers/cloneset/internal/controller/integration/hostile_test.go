package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// The API server refuses what the controller could not serve (issue 26):
// replicas beyond pub.MaxReplicas, also through /scale, and names so long
// that the pods' controller-revision-hash label (<name>-<hash>) would be
// invalid, which made every pod creation fail.
func TestHostileSpecsRefusedAtAdmission(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	lab.RefusedAtAdmission(t, h.Client.AppsV1alpha1().CloneSets(h.NS).Create, []lab.Refusal[*appsv1alpha1.CloneSet]{
		{Name: "replicas 10,000,000", Object: newCloneSet("huge", 10_000_000), Want: "spec.replicas"},
		{Name: "name of 53 characters", Object: newCloneSet(strings.Repeat("n", 53), 1), Want: "metadata.name must be at most 52 characters"},
	})
	h.create(newCloneSet("small", 1))
	_, err := h.Client.AppsV1alpha1().CloneSets(h.NS).UpdateScale(ctx, "small",
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: h.NS, ResourceVersion: h.get("small").ResourceVersion},
			Spec: autoscalingv1.ScaleSpec{Replicas: 10_000_000}}, metav1.UpdateOptions{})
	require.Error(t, err, "/scale accepted 10,000,000 replicas")
	assert.ErrorContains(t, err, "spec.replicas")
}

// The longest name admission allows still gives valid pods.
func TestLongestNameRunsPods(t *testing.T) {
	h := newHarness(t)
	name := strings.Repeat("n", pub.MaxWorkloadNameLength)
	h.startController()
	h.create(newCloneSet(name, 2))
	st := h.waitStatus(name, "2 settled", settled(2))
	lab.CheckLongestName(t, name, h.pods(name), st.Status.UpdateRevision)
}

// A CloneSet at the replica maximum is served in bursts of at most 500
// creations per sync while the same controller keeps another CloneSet
// converging. A ResourceQuota (pods with requests: NotBestEffort) stops the
// big one at 1,000 pods at most, as a tenant's quota would; its pods are held by a
// scheduling gate so they load neither the scheduler nor the nodes. The
// peak heap of the test process (controller, informers and the test's
// clients) is logged for bench/RESULTS.md.
func TestMaxReplicasServedInBursts(t *testing.T) {
	h := newHarness(t)
	const quota = 1000
	pods, peak := h.FirstBurst(quota, func() {
		h.startController()
		h.create(newCloneSet("huge", pub.MaxReplicas, func(cs *appsv1alpha1.CloneSet) { testenv.HoldPods(&cs.Spec.Template.Spec) }))
		h.create(newCloneSet("small", 3))
		h.waitStatus("small", "3 settled while the big one scales", settled(3))
	}, func() []corev1.Pod {
		// At least one burst; how many more before the quota stops it
		// depends on how quota conflicts back the CloneSet off.
		return h.waitPods("huge", "a first burst of 500 pods", func(pods []corev1.Pod) bool { return len(pods) >= 500 })
	})
	t.Logf("CloneSet of %d replicas (quota: %d pods) had %d pods when a 3-replica CloneSet beside it had converged and its first burst was seen; peak heap in use %.1f MiB",
		pub.MaxReplicas, quota, len(pods), float64(peak)/(1<<20))
}
