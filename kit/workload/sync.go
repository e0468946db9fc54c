package workload

import (
	"context"
	"fmt"
	"iter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// Get is the first step of a sync (kit/controller.Lookup): the workload of
// key through get (a namespaced lister's Get; read-only), or ok false when
// the cache no longer has it — forget then drops what the controller kept
// for it (its pods go with it through garbage collection).
func Get[O any](b *Base, key types.NamespacedName, get func(name string) (O, error), forget func(types.NamespacedName)) (obj O, ok bool, err error) {
	obj, ok, err = controller.Lookup(b.Owner.Kind, key, get)
	if !ok && err == nil {
		forget(key)
	}
	return obj, ok, err
}

// ScaleInFlight reports whether creations or deletions of key's pods are
// not yet observed; the workload is then requeued for when they expire (an
// event usually comes first). Expectations that timed out are logged (an
// event was lost) and the sync acts on the cache.
func (b *Base) ScaleInFlight(ctx context.Context, key types.NamespacedName, exp *expectations.Scale[types.NamespacedName]) bool {
	ok, age := exp.Satisfied(key)
	if !ok {
		klog.FromContext(ctx).V(4).Info("Waiting for creations/deletions to be observed", "pending", age)
		b.Queue.AddAfter(key, exp.Timeout()-age)
		return true
	}
	if age > 0 {
		klog.FromContext(ctx).Info("Scale expectations timed out: an event was lost, acting on the cache", "after", age)
	}
	return false
}

// OwnWritesPending reports whether the cache does not yet show a write this
// controller made to objs or pods; key is then requeued for when the
// earliest of those expectations expires.
func (b *Base) OwnWritesPending(ctx context.Context, key types.NamespacedName, pods iter.Seq[*corev1.Pod], objs ...metav1.Object) bool {
	wait := expectations.WaitAll(b.RV, pods, objs...)
	if wait <= 0 {
		return false
	}
	klog.FromContext(ctx).V(4).Info("Waiting for the cache to show our own writes", "wait", wait)
	b.Queue.AddAfter(key, wait)
	return true
}

// Finish is the last step of a sync: a retryable err is returned for the
// loop to retry; otherwise key is requeued for the earliest time-driven
// wake-up the steps asked for, and err (nil, or permanent: reported in
// status and events) returned for the loop to log, not retry.
func (b *Base) Finish(key types.NamespacedName, err error, requeue *controller.Requeue) error {
	if controller.Retryable(err) != nil {
		return err
	}
	if d := requeue.Earliest(); d > 0 {
		b.Queue.AddAfter(key, d)
	}
	return err
}

// OwnedPods returns the cached pods owner controls, terminating ones
// included. Read-only.
func (b *Base) OwnedPods(owner metav1.Object) ([]*corev1.Pod, error) {
	pods, err := controller.Controlled[*corev1.Pod](b.Pods, owner)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	return pods, nil
}
