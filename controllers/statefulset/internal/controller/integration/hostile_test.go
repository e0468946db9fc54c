package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// reserveRanges reserves n ranges of width ordinals each, starting at
// ordinal 1 and spaced every 2*width: 1-width, 2*width+1-3*width, ...
func reserveRanges(n, width int) func(*appsv1beta1.StatefulSet) {
	return func(set *appsv1beta1.StatefulSet) {
		set.Spec.ReserveOrdinals = nil
		for i := range n {
			lo := i*2*width + 1
			set.Spec.ReserveOrdinals = append(set.Spec.ReserveOrdinals, intstr.FromString(fmt.Sprintf("%d-%d", lo, lo+width-1)))
		}
	}
}

// The API server refuses what the controller could not serve (issue 26):
// replicas beyond pub.MaxReplicas, reserveOrdinals reserving more than
// pub.MaxReservedOrdinals ordinals (1000 ranges of 100,000 were accepted:
// 10^8 ordinals the controller expanded into a set), and names so long that
// the pods' controller-revision-hash label (<name>-<hash>) is invalid, which
// made every pod creation fail — in both served versions.
func TestHostileSpecsRefusedAtAdmission(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	lab.RefusedAtAdmission(t, h.Client.AppsV1beta1().StatefulSets(h.NS).Create, []lab.Refusal[*appsv1beta1.StatefulSet]{
		{Name: "replicas 10,000,000", Object: newSet("huge", 10_000_000), Want: "spec.replicas"},
		{Name: "1000 reserved ranges of 100,000", Object: newSet("wide", 3, reserveRanges(1000, 100000)), Want: "spec.reserveOrdinals may reserve at most 100000 ordinals"},
		{Name: "one ordinal more than allowed", Object: newSet("wide", 3, reserveRanges(1000, 100), func(s *appsv1beta1.StatefulSet) {
			s.Spec.ReserveOrdinals[0] = intstr.FromString("1-101")
		}), Want: "spec.reserveOrdinals may reserve at most 100000 ordinals"},
		{Name: "name of 53 characters", Object: newSet(strings.Repeat("n", 53), 1), Want: "metadata.name must be at most 52 characters"},
	})
	t.Run("v1alpha1 name of 53 characters", func(t *testing.T) {
		set := newSet(strings.Repeat("n", 53), 1)
		_, err := h.Client.AppsV1alpha1().StatefulSets(h.NS).Create(ctx, &appsv1alpha1.StatefulSet{ObjectMeta: set.ObjectMeta, Spec: set.Spec}, metav1.CreateOptions{})
		require.Error(t, err, "the API server accepted it")
		assert.ErrorContains(t, err, "metadata.name must be at most 52 characters")
	})
}

// The longest name admission allows still gives valid pods.
func TestLongestNameRunsPods(t *testing.T) {
	h := newHarness(t)
	name := strings.Repeat("n", pub.MaxWorkloadNameLength)
	h.startController()
	h.create(newSet(name, 2, parallel))
	st := h.waitStatus(name, "2 settled", settled(2))
	lab.CheckLongestName(t, name, h.pods(name), st.Status.UpdateRevision)
}

// A Parallel set at the replica maximum with the widest reserveOrdinals the
// CRD allows (1000 ranges, 100,000 ordinals) is served in bursts of at most
// 500 creations per sync, in the right slots, while the same controller
// keeps another set converging. A ResourceQuota (pods with requests:
// NotBestEffort) stops the big one at 1,000 pods at most, as a tenant's quota
// would; its pods are held by a scheduling gate so they load neither the
// scheduler nor the nodes. The peak heap of the test process (controller,
// informers and the test's clients) is logged for bench/RESULTS.md.
func TestWidestSetServedInBursts(t *testing.T) {
	h := newHarness(t)
	const quota = 1000
	pods, peak := h.FirstBurst(quota, func() {
		h.startController()
		h.create(newSet("huge", pub.MaxReplicas, parallel, reserveRanges(1000, 100), func(set *appsv1beta1.StatefulSet) {
			testenv.HoldPods(&set.Spec.Template.Spec)
		}))
		h.create(newSet("small", 3, parallel))
		h.waitStatus("small", "3 settled while the big one scales", settled(3))
	}, func() []corev1.Pod {
		return h.waitPods("huge", "a first burst of 500 pods", func(pods []corev1.Pod) bool { return len(pods) >= 500 })
	})
	for _, p := range pods {
		o := ordinal(p.Name)
		// reserved: 1-100, 201-300, ...
		assert.False(t, o%200 >= 1 && o%200 <= 100, "pod %s is in a reserved ordinal", p.Name)
	}
	t.Logf("Advanced StatefulSet of %d replicas, 1000 reserved ranges (%d ordinals), quota %d pods: %d pods when a 3-replica set beside it had converged and its first burst was seen; peak heap in use %.1f MiB",
		pub.MaxReplicas, pub.MaxReservedOrdinals, quota, len(pods), float64(peak)/(1<<20))
}
