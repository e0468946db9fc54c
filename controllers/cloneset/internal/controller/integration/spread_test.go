package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// v0.10 seed: with topologySpreadConstraints, scale-in takes pods from the
// most populated topology domain first. Zone a holds two pods, each alone
// on its node; zone b one pod, created last. Counting pods per node, every
// pod ranks the same and the most recently ready one — zone b's — would go;
// ranked by zone, a zone-a pod goes and the spread stays even.
func TestScaleDownTopologySpread(t *testing.T) {
	h := newHarness(t)
	h.startController()
	node := func(zone, host string) string {
		return h.Env.KwokNodes(t, h.NS, 1, map[string]string{"topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": host})[0]
	}
	a1, a2 := node("a", h.NS+"-a1"), node("a", h.NS+"-a2")
	h.create(newCloneSet("spread", 2, func(cs *appsv1alpha1.CloneSet) {
		spec := &cs.Spec.Template.Spec
		spec.NodeSelector = map[string]string{testenv.TestNodeLabel: h.NS}
		spec.Tolerations = []corev1.Toleration{testenv.TestNodeToleration()}
		for _, key := range []string{"topology.kubernetes.io/zone", "kubernetes.io/hostname"} {
			spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
				MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: cs.Spec.Selector,
			})
		}
	}))
	first := h.waitPods("spread", "one pod on each zone-a node", func(ps []corev1.Pod) bool {
		return allReady(2)(ps) && onNodes(ps, a1, a2)
	})
	// Ready times have a resolution of a second. The zone-b pod must be
	// ready strictly later than the zone-a pods, so that without the zone
	// rank it is the one the deletion order picks.
	readyAt := latestReady(first)
	testenv.Eventually(t, 5*time.Second, func() (bool, error) { return time.Now().Truncate(time.Second).After(readyAt), nil })
	// Zone b appears; the zone constraint puts the third pod there.
	b1 := node("b", h.NS+"-b1")
	h.modify("spread", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(3)) })
	pods := h.waitPods("spread", "the third pod in zone b", func(ps []corev1.Pod) bool {
		return allReady(3)(ps) && onNodes(ps, a1, a2, b1)
	})
	var inB string
	for _, p := range pods {
		if p.Spec.NodeName == b1 {
			inB = p.Name
		}
	}
	require.NotEmpty(t, inB)

	h.modify("spread", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(2)) })
	after := h.waitPods("spread", "2 left", allReady(2))
	assert.Contains(t, names(after), inB, "zone b's only pod stays; a zone-a pod is deleted")
}

func latestReady(pods []corev1.Pod) time.Time {
	var last time.Time
	for i := range pods {
		if c := podCondition(&pods[i], corev1.PodReady); c.LastTransitionTime.After(last) {
			last = c.LastTransitionTime.Time
		}
	}
	return last
}

// onNodes: the pods sit on exactly these nodes, one each.
func onNodes(pods []corev1.Pod, nodes ...string) bool {
	if len(pods) != len(nodes) {
		return false
	}
	seen := map[string]bool{}
	for _, p := range pods {
		seen[p.Spec.NodeName] = true
	}
	for _, n := range nodes {
		if !seen[n] {
			return false
		}
	}
	return true
}
