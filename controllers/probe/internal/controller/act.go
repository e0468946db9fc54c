package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// The pod writes: marking pods from probe results and taking a marker's
// marks off. What to write is decided in plan.go (markPod, unmarkPod); the
// writes go through kit/podcontrol as patches of the difference.

// markPods copies npp's status onto the in-scope pods it reports on (same
// UID), one pods/status patch of the difference per pod that changes: metadata
// changes are accepted through the pods/status subresource, so labels,
// annotations and the condition land together.
func (c *Controller) markPods(ctx context.Context, npp *appsv1alpha1.NodePodProbe, pods []*corev1.Pod, markers map[string]map[string]*appsv1alpha1.PodProbeMarker) error {
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		if podActive(p) {
			byUID[p.UID] = p
		}
	}
	for _, st := range npp.Status.PodProbeStatuses {
		p := byUID[types.UID(st.UID)]
		if p == nil || !c.inScope(p.Namespace) {
			continue
		}
		if ok, wait := c.podRV.Satisfied(p); !ok {
			c.nodeQueue.AddAfter(npp.Name, wait) // the pod's update event usually comes first
			continue
		}
		written, err := c.writePod(ctx, p, markPod(p, st.ProbeStates, markers[p.Namespace]), "mark")
		if err != nil {
			return err
		}
		if written {
			klog.FromContext(ctx).V(2).Info("Marked pod from probe results", "pod", klog.KObj(p))
		}
	}
	return nil
}

// unmarkSelected takes the markers of m's probes off the active pods m
// selects.
func (c *Controller) unmarkSelected(ctx context.Context, m *appsv1alpha1.PodProbeMarker, pods []*corev1.Pod) error {
	sel, err := metav1.LabelSelectorAsSelector(m.Spec.Selector)
	if err != nil {
		return fmt.Errorf("selector of PodProbeMarker %s/%s: %w", m.Namespace, m.Name, err)
	}
	for _, p := range pods {
		if !podActive(p) || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if _, err := c.writePod(ctx, p, unmarkPod(p, m), "unmark"); err != nil {
			return err
		}
	}
	return nil
}

// writePod writes upd (plan.go's pod with its marks changed; nil: nothing to
// write) over p as one pods/status patch of the difference and expects the
// written resourceVersion in the cache; what names the write in errors.
func (c *Controller) writePod(ctx context.Context, p, upd *corev1.Pod, what string) (bool, error) {
	if upd == nil {
		return false, nil
	}
	written, err := c.podControl.PatchStatus(ctx, p, upd)
	if err != nil {
		return false, fmt.Errorf("%s pod %s/%s: %w", what, p.Namespace, p.Name, err)
	}
	c.podRV.Expect(written)
	return true, nil
}
