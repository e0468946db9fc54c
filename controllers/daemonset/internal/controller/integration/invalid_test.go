package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/daemonset/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func invalidCondition(ds *appsv1alpha1.DaemonSet) *appsv1.DaemonSetCondition {
	for i := range ds.Status.Conditions {
		if ds.Status.Conditions[i].Type == controller.ConditionInvalidSpec {
			return &ds.Status.Conditions[i]
		}
	}
	return nil
}

// warnings sums the counts of Warning events with reason on DaemonSet name.
func (h *harness) warnings(name, reason string) int32 {
	return h.CountEvents(name, func(e corev1.Event) bool { return e.Type == corev1.EventTypeWarning && e.Reason == reason })
}

// TestInvalidSpecCondition: what admission cannot see — a template the API
// server rejects as a pod (the template is schemaless), selector expressions
// the template's labels do not satisfy — gives a Warning event and the
// InvalidSpec condition, without a hot loop; fixing the spec clears it.
func TestInvalidSpecCondition(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2, nil)
	h.start()
	h.sets.Create(h.newDS("bad", func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Name = "Not_A_DNS_Label"
	}))
	ds := h.sets.WaitFor("bad", "InvalidSpec condition", func(ds *appsv1alpha1.DaemonSet) bool {
		c := invalidCondition(ds)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "PodRejected"
	})
	assert.Contains(t, invalidCondition(ds).Message, "spec.containers[0].name")
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return h.warnings("bad", controller.EventFailedCreate) > 0, nil })
	before, rv := h.warnings("bad", controller.EventFailedCreate), h.sets.Get("bad").ResourceVersion
	testenv.Consistently(t, 3*time.Second, func() error {
		if n := h.warnings("bad", controller.EventFailedCreate); n > before+2 {
			return fmt.Errorf("hot loop: %d failed creations after %d", n, before)
		}
		if got := h.sets.Get("bad").ResourceVersion; got != rv {
			return fmt.Errorf("DaemonSet rewritten (%s → %s)", rv, got)
		}
		return nil
	})
	h.sets.Modify("bad", func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Name = "main" })
	h.waitPlaced("bad", nodes, "")
	h.sets.WaitFor("bad", "condition cleared", func(ds *appsv1alpha1.DaemonSet) bool {
		c := invalidCondition(ds)
		return c != nil && c.Status == corev1.ConditionFalse
	})

	// Selector expressions that the template's labels miss: nothing created.
	h.sets.Create(h.newDS("mismatch", func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}
	}))
	h.sets.WaitFor("mismatch", "InvalidSpec condition", func(ds *appsv1alpha1.DaemonSet) bool {
		c := invalidCondition(ds)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "SelectorMismatch"
	})
	assert.Empty(t, h.pods("mismatch"))
	assert.Positive(t, h.warnings("mismatch", controller.EventInvalidSpec))
}
