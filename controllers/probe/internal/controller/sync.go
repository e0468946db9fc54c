package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// syncNode brings node's NodePodProbe spec to the probes of the pods bound
// to it, then copies its status onto those pods. A node that is gone takes
// its NodePodProbe with it.
func (c *Controller) syncNode(ctx context.Context, node string) error {
	logger := klog.FromContext(ctx).WithValues("node", node)
	npp, err := c.probes.Get(node)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get NodePodProbe %s: %w", node, err)
	}
	// A reconciler restricted to one namespace (tests) deletes only a
	// NodePodProbe that lists nothing outside its namespace.
	if npp != nil && npp.DeletionTimestamp == nil && !c.listsForeign(npp) {
		if n, err := c.nodes.Get(node); apierrors.IsNotFound(err) || (err == nil && n.DeletionTimestamp != nil) {
			logger.V(2).Info("Deleting NodePodProbe of a deleted node")
			err := c.client.AppsV1alpha1().NodePodProbes().Delete(ctx, node, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &npp.UID}})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete NodePodProbe %s: %w", node, err)
			}
			return nil
		}
	}
	pods, err := c.podsOnNode(node)
	if err != nil {
		return err
	}
	markers, err := c.markersOf(pods)
	if err != nil {
		return err
	}
	var all []*appsv1alpha1.PodProbeMarker
	for _, byName := range markers {
		for _, m := range byName {
			all = append(all, m)
		}
	}
	desired := c.fit(ctx, node, npp, desiredPodProbes(pods, all), markers)
	written, werr := c.writeSpec(ctx, node, npp, desired)
	if werr == nil {
		npp = written
	}
	// Results already reported still reach the pods when the spec write
	// fails (a conflict, an object over etcd's limit, a broken webhook): one
	// bad write must not freeze every tenant's markers on the node.
	if npp == nil {
		return werr
	}
	if err := c.markPods(ctx, npp, pods, markers); err != nil {
		return errors.Join(werr, err)
	}
	return werr
}

// fit leaves out of desired the namespaces whose probes would take node's
// NodePodProbe spec over the budget (fitSpec), with a Warning event on each of
// their markers that places probes on the node.
func (c *Controller) fit(ctx context.Context, node string, npp *appsv1alpha1.NodePodProbe, desired []appsv1alpha1.PodProbe, markers map[string]map[string]*appsv1alpha1.PodProbeMarker) []appsv1alpha1.PodProbe {
	var existing []appsv1alpha1.PodProbe
	if npp != nil {
		existing = npp.Spec.PodProbes
	}
	drop, size := fitSpec(mergeSpec(existing, desired, c.inScope), c.specBudget, c.inScope)
	if len(drop) == 0 {
		return desired
	}
	for _, d := range drop {
		klog.FromContext(ctx).Info("Probes of a namespace left out of a NodePodProbe over its size budget",
			"node", node, "namespace", d.Namespace, "bytes", d.Bytes, "budget", c.specBudget)
		if c.recorder == nil {
			continue
		}
		for _, name := range markersIn(desired, d.Namespace) {
			if m := markers[d.Namespace][name]; m != nil {
				c.recorder.Eventf(m, corev1.EventTypeWarning, ReasonTooLarge,
					"Probes of namespace %s are not run on node %s: they take %d bytes of its NodePodProbe (probes x selected pods), over the %d-byte budget together with the other namespaces' (%d bytes without them)",
					d.Namespace, node, d.Bytes, c.specBudget, size)
			}
		}
	}
	return withoutNamespaces(desired, drop)
}

// markersIn returns the names of the markers with probes in ns's entries of
// spec, sorted.
func markersIn(spec []appsv1alpha1.PodProbe, ns string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range spec {
		if p.Namespace != ns {
			continue
		}
		for _, pr := range p.Probes {
			if m, _, ok := splitProbeName(pr.Name); ok && !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	sort.Strings(out)
	return out
}

// markersOf returns the PodProbeMarkers of the pods' namespaces, by
// namespace and name.
func (c *Controller) markersOf(pods []*corev1.Pod) (map[string]map[string]*appsv1alpha1.PodProbeMarker, error) {
	out := map[string]map[string]*appsv1alpha1.PodProbeMarker{}
	for _, p := range pods {
		if _, done := out[p.Namespace]; done {
			continue
		}
		ms, err := c.markers.PodProbeMarkers(p.Namespace).List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("list PodProbeMarkers of %s: %w", p.Namespace, err)
		}
		out[p.Namespace] = map[string]*appsv1alpha1.PodProbeMarker{}
		for _, m := range ms {
			out[p.Namespace][m.Name] = m
		}
	}
	return out, nil
}

// writeSpec creates or updates node's NodePodProbe so that its in-scope
// entries are desired. No NodePodProbe is created for a node without
// probes. It returns the current object (nil if there is none).
func (c *Controller) writeSpec(ctx context.Context, node string, npp *appsv1alpha1.NodePodProbe, desired []appsv1alpha1.PodProbe) (*appsv1alpha1.NodePodProbe, error) {
	logger := klog.FromContext(ctx).WithValues("node", node)
	if npp == nil {
		if len(desired) == 0 {
			return nil, nil
		}
		if _, err := c.nodes.Get(node); err != nil {
			return nil, nil // not a node (yet) in the cache: its add event brings us back
		}
		created, err := c.client.AppsV1alpha1().NodePodProbes().Create(ctx, &appsv1alpha1.NodePodProbe{
			ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec:       appsv1alpha1.NodePodProbeSpec{PodProbes: desired},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Our cache is behind a create (ours, just before a restart or a
			// requeue): its add event brings the node back with the object.
			logger.V(4).Info("NodePodProbe exists but is not in the cache yet")
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("create NodePodProbe %s: %w", node, err)
		}
		logger.V(2).Info("Created NodePodProbe", "pods", len(desired))
		return created, nil
	}
	merged := mergeSpec(npp.Spec.PodProbes, desired, c.inScope)
	if equality.Semantic.DeepEqual(merged, npp.Spec.PodProbes) || (len(merged) == 0 && len(npp.Spec.PodProbes) == 0) {
		return npp, nil
	}
	upd := npp.DeepCopy()
	upd.Spec.PodProbes = merged
	updated, err := c.client.AppsV1alpha1().NodePodProbes().Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update NodePodProbe %s: %w", node, err)
	}
	logger.V(2).Info("Updated NodePodProbe", "pods", len(merged))
	return updated, nil
}

// syncMarker keeps the finalizer on a live PodProbeMarker and its status
// current; for a deleted one it removes its markers from the pods it
// selected and then the finalizer. NodePodProbe entries follow in the node
// loop (handlers enqueue the nodes).
func (c *Controller) syncMarker(ctx context.Context, key types.NamespacedName) error {
	if !c.inScope(key.Namespace) {
		return nil
	}
	m, err := c.markers.PodProbeMarkers(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get PodProbeMarker %s: %w", key, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(m.Spec.Selector)
	if err != nil {
		return nil // the schema admits only valid selectors; retrying would not help
	}
	pods, err := c.pods.Pods(key.Namespace).List(sel)
	if err != nil {
		return fmt.Errorf("list pods of %s: %w", key, err)
	}
	if m.DeletionTimestamp != nil {
		c.takeRetired(key)
		return c.cleanup(ctx, m, pods)
	}
	if retired := c.takeRetired(key); len(retired) > 0 {
		// A view of the marker with only its retired probes, read and never
		// written: a shallow copy leaves the cached object untouched.
		gone := *m
		gone.Spec.Probes = retired
		if err := c.unmarkSelected(ctx, &gone, pods); err != nil {
			c.retire(key, retired)
			return err
		}
	}
	if !hasFinalizer(m) {
		upd := m.DeepCopy()
		upd.Finalizers = append(upd.Finalizers, Finalizer)
		if m, err = c.client.AppsV1alpha1().PodProbeMarkers(key.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("add finalizer to PodProbeMarker %s: %w", key, err)
		}
	}
	// No conditions: the reconciler running drops an Enabled=False left by Disabled.
	status := appsv1alpha1.PodProbeMarkerStatus{ObservedGeneration: m.Generation, MatchedPods: matchedPods(m, pods)}
	if equality.Semantic.DeepEqual(status, m.Status) {
		return nil
	}
	upd := m.DeepCopy()
	upd.Status = status
	if _, err := c.client.AppsV1alpha1().PodProbeMarkers(key.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of PodProbeMarker %s: %w", key, err)
	}
	return nil
}

func (c *Controller) cleanup(ctx context.Context, m *appsv1alpha1.PodProbeMarker, pods []*corev1.Pod) error {
	if !hasFinalizer(m) {
		return nil
	}
	if err := c.unmarkSelected(ctx, m, pods); err != nil {
		return err
	}
	upd := m.DeepCopy()
	upd.Finalizers = nil
	for _, f := range m.Finalizers {
		if f != Finalizer {
			upd.Finalizers = append(upd.Finalizers, f)
		}
	}
	if _, err := c.client.AppsV1alpha1().PodProbeMarkers(m.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer of PodProbeMarker %s/%s: %w", m.Namespace, m.Name, err)
	}
	return nil
}

func hasFinalizer(m *appsv1alpha1.PodProbeMarker) bool {
	for _, f := range m.Finalizers {
		if f == Finalizer {
			return true
		}
	}
	return false
}

// listsForeign says whether npp lists pods of a namespace outside this
// reconciler's scope.
func (c *Controller) listsForeign(npp *appsv1alpha1.NodePodProbe) bool {
	for _, pp := range npp.Spec.PodProbes {
		if !c.inScope(pp.Namespace) {
			return true
		}
	}
	return false
}
