package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// ReasonDisabled is the reason of the Warning event a PodProbeMarker gets
// while probe-controller runs with PodProbeMarkerGate off.
const ReasonDisabled = "PodProbeMarkerDisabled"

// Disabled is what probe-controller runs when PodProbeMarkerGate is off
// (after the gate rules: it needs KruiseDaemon, a node agent). It places no
// probe, adds no finalizer and claims no reconciliation (observedGeneration
// stays): each PodProbeMarker, when it appears or its spec changes, gets a
// Warning event and the condition Enabled=False saying it is not acted on and
// why, so that a marker accepted by the API server is not ignored in silence.
type Disabled struct {
	client   versioned.Interface
	markers  appslisters.PodProbeMarkerLister
	recorder record.EventRecorder
	why      string
	// Reconciler is the queue and loop (and Name and Run).
	*controller.Reconciler[types.NamespacedName]
}

var _ kitapp.Controller = (*Disabled)(nil)

// NewDisabled watches PodProbeMarkers; why ends the events' message.
func NewDisabled(d wiring.Deps, why string) (*Disabled, error) {
	inf := d.Informers.Apps().V1alpha1().PodProbeMarkers()
	c := &Disabled{client: d.Client, markers: inf.Lister(), recorder: d.Recorder, why: why}
	c.Reconciler = controller.NewReconciler(Name+"-disabled", d.QueueOptions, d.QueueConfig, c.sync)
	c.WaitFor(inf.Informer().HasSynced)
	enqueue := func(obj any) {
		if key, ok := controller.KeyOf(obj); ok {
			c.Queue.Enqueue(key)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*appsv1alpha1.PodProbeMarker)
			n, ok2 := obj.(*appsv1alpha1.PodProbeMarker)
			if ok1 && ok2 && o.Generation != n.Generation {
				enqueue(obj)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watch PodProbeMarkers: %w", err)
	}
	return c, nil
}

func (c *Disabled) sync(ctx context.Context, key types.NamespacedName) error {
	m, found, err := controller.Lookup("PodProbeMarker", key, c.markers.PodProbeMarkers(key.Namespace).Get)
	if !found || m.DeletionTimestamp != nil {
		return err
	}
	msg := "Not acted on: no probe is placed and no pod is marked, " + c.why
	c.recorder.Event(m, corev1.EventTypeWarning, ReasonDisabled, msg)
	cond := metav1.Condition{Type: appsv1alpha1.PodProbeMarkerEnabled, Status: metav1.ConditionFalse, Reason: ReasonDisabled,
		Message: msg, ObservedGeneration: m.Generation}
	if cur := meta.FindStatusCondition(m.Status.Conditions, cond.Type); cur != nil && cur.Status == cond.Status &&
		cur.Reason == cond.Reason && cur.Message == cond.Message && cur.ObservedGeneration == cond.ObservedGeneration {
		return nil
	}
	upd := m.DeepCopy()
	meta.SetStatusCondition(&upd.Status.Conditions, cond)
	if _, err := c.client.AppsV1alpha1().PodProbeMarkers(m.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write condition %s of PodProbeMarker %s: %w", cond.Type, key, err)
	}
	return nil
}
