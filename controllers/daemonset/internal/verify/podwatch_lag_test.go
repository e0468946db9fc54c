package verify

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// TestPodWatchLagIsNotUnavailability shows why enforce waits for the watch
// to catch up: every node runs a Ready pod (as a List shows), but a watch
// that has not yet delivered half of the Ready events counts those nodes as
// unavailable, over any budget, though no pod was ever deleted. This is how
// TestOnePodPerNodeUnderLoad could report 28 unavailable nodes against 18
// when run among other tests: its first rollout's checks started right after
// a List showed every pod Ready, without waiting for its watch.
func TestPodWatchLagIsNotUnavailability(t *testing.T) {
	w := &podWatch{pods: map[types.UID]*corev1.Pod{}, ready: map[types.UID]bool{}, gone: map[types.UID]bool{}, ops: map[string][]string{}, owner: map[types.UID]types.UID{}}
	const nodes = 60
	var names []string
	for i := range nodes {
		node := fmt.Sprintf("n%02d", i)
		names = append(names, node)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + node, UID: types.UID(node)}, Spec: corev1.PodSpec{NodeName: node}}
		w.observe(watch.Added, p)
		if i%2 == 0 { // the watch is behind on the other half
			p = p.DeepCopy()
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			w.observe(watch.Modified, p)
		}
	}
	w.startChecks(names, 0, nodes*3/10)
	p, violations := w.relax()
	assert.Equal(t, nodes/2, p.unavailable, "a lagging watch counts nodes whose Ready event it has not seen")
	assert.NotEmpty(t, violations, "…and reports a violation no controller caused: hence enforce waits for caughtUp")
}
