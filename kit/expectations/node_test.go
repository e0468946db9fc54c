package expectations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestNode(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	e := NewNode[types.NamespacedName](WithClock(clk), WithTimeout(time.Minute))
	key := types.NamespacedName{Namespace: "ns", Name: "j"}
	none := func(string) bool { return false }

	e.Expect(key, "u1", "n1", "p1")
	e.Expect(key, "u1", "n2", "")
	clk.Step(10 * time.Second)
	nodes, next := e.Pending(key, "u1", none)
	assert.Equal(t, sets.New("n1", "n2"), nodes)
	assert.Equal(t, 50*time.Second, next)

	// Seen in the cache by name.
	nodes, _ = e.Pending(key, "u1", func(p string) bool { return p == "p1" })
	assert.Equal(t, sets.New("n2"), nodes)

	// An unknown-outcome create is settled by any new pod on its node.
	e.Observed(key, "n2", "whatever")
	nodes, next = e.Pending(key, "u1", none)
	assert.Empty(t, nodes)
	assert.Zero(t, next)

	// A named expectation is not settled by another pod.
	e.Expect(key, "u1", "n3", "p3")
	e.Observed(key, "n3", "p-other")
	nodes, _ = e.Pending(key, "u1", none)
	assert.Equal(t, sets.New("n3"), nodes)
	e.Observed(key, "n3", "p3")
	nodes, _ = e.Pending(key, "u1", none)
	assert.Empty(t, nodes)

	// Expiry: a lost event does not block the node for ever.
	e.Expect(key, "u1", "n4", "p4")
	clk.Step(time.Minute)
	nodes, _ = e.Pending(key, "u1", none)
	assert.Empty(t, nodes)

	// A recreated job (new UID) does not inherit expectations; forget drops them.
	e.Expect(key, "u1", "n5", "p5")
	nodes, _ = e.Pending(key, "u2", none)
	assert.Empty(t, nodes)
	e.Expect(key, "u2", "n5", "p5")
	e.Forget(key)
	nodes, _ = e.Pending(key, "u2", none)
	assert.Empty(t, nodes)
}
