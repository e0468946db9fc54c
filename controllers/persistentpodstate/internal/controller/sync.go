package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/topology"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// sync reconciles one key: a StatefulSet's generated PersistentPodState, or
// a PersistentPodState's records (gather → calculateRecords → events →
// status, written only when it changed).
func (c *Controller) sync(ctx context.Context, key Key) error {
	if key.Generate != "" {
		return c.syncGenerated(ctx, key)
	}
	pps, err := c.states.PersistentPodStates(key.Namespace).Get(key.Name)
	if err != nil {
		return ignoreNotFound(err)
	}
	if pps.DeletionTimestamp != nil {
		return nil
	}
	target, ok := topology.OfPersistentPodState(pps)
	if !ok {
		// The CRD's rules reject such a targetRef; one stored before them targets nothing.
		return controller.Permanent(fmt.Errorf("PersistentPodState %s/%s: unsupported targetRef", pps.Namespace, pps.Name))
	}
	w, err := c.workloadOf(target)
	if err != nil {
		return fmt.Errorf("PersistentPodState %s/%s: get %s: %w", pps.Namespace, pps.Name, target, err)
	}
	pods, err := c.podsOf(target)
	if err != nil {
		return fmt.Errorf("PersistentPodState %s/%s: pods of %s: %w", pps.Namespace, pps.Name, target, err)
	}
	r := calculateRecords(recordInput{ppsName: pps.Name, spec: &pps.Spec, old: pps.Status.PodStates, pods: pods,
		nodeLabels: c.nodeLabels, target: w})
	c.reportMissed(pps, r.missed)
	return c.updateStatus(ctx, pps, calculateStatus(&pps.Status, pps.Generation, r, metav1.NewTime(c.Clock.Now())))
}

// syncGenerated keeps the PersistentPodState a StatefulSet's annotations
// ask for (planGenerate).
func (c *Controller) syncGenerated(ctx context.Context, key Key) error {
	w, err := c.workloadOf(topology.Target{Namespace: key.Namespace, Group: key.Generate, Name: key.Name})
	if err != nil || w == nil {
		return err
	}
	existing, err := c.states.PersistentPodStates(key.Namespace).Get(key.Name)
	if err = ignoreNotFound(err); err != nil {
		return fmt.Errorf("get PersistentPodState %s/%s: %w", key.Namespace, key.Name, err)
	}
	return c.actGenerate(ctx, w, planGenerate(w, existing))
}

// podsOf returns the cached pods t controls (read-only).
func (c *Controller) podsOf(t topology.Target) ([]*corev1.Pod, error) {
	objs, err := c.pods.ByIndex(topology.TargetIndex, t.String())
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// nodeLabels reads a node's labels from the cache.
func (c *Controller) nodeLabels(name string) (map[string]string, bool) {
	n, err := c.nodes.Get(name)
	if err != nil {
		return nil, false
	}
	return n.Labels, true
}
