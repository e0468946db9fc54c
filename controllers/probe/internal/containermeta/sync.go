package containermeta

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/containermeta"
)

// sync brings one pod's runtime-containers-meta up to date and, once it is
// written, stops the containers whose env from metadata changed. The
// annotation is written before any stop: a decision is always taken from
// what the pod records, so an agent restarted mid-way decides the same, and
// a stopped container is never stopped twice (stop checks it still runs; a
// new container has a new ID and its own entry). A stop waits DefaultSettleDelay after it is first decided, for the
// kubelet to see the new metadata before it starts the new container.
func (w *Worker) sync(ctx context.Context, key types.NamespacedName) error {
	pod, err := w.lister.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if !inScope(pod) {
		return nil
	}
	old, err := containermeta.Decode(pod)
	if err != nil {
		// Unreadable: rebuilt from the runtime and overwritten.
		klog.FromContext(ctx).Info("Rewriting an unreadable annotation", "pod", klog.KObj(pod), "err", err)
		old = nil
	}
	obs, retry := w.observe(ctx, pod, newEntries(pod, old))
	if retry {
		w.Queue.AddAfter(key, retryInterval)
	}
	if set := buildSet(pod, old, obs); (old == nil && len(set.Containers) > 0) || (old != nil && !reflect.DeepEqual(old, set)) {
		// The write's own event brings the pod back for the restarts.
		return w.write(ctx, pod, set)
	}
	for _, r := range restarts(pod, old) {
		if ok, wait := w.due(r); !ok {
			w.Queue.AddAfter(key, wait)
			continue
		}
		if err := w.stop(ctx, pod, r); err != nil {
			return err
		}
	}
	return nil
}
