package podreadiness

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
)

// Writer applies key changes to pods through the pods/status subresource.
//
// It computes the new conditions with Apply from the pod it is given
// (typically straight from an informer cache; it is never modified) and
// writes them as a pods/status patch guarded by the pod's resourceVersion
// (podcontrol.PodControl.PatchStatus): a concurrent change by another writer of the shared
// condition makes it fail with Conflict rather than lose that writer's key.
// On Conflict it reads the pod from the API server, recomputes and retries
// (client-go's retry.DefaultRetry back-off). When nothing would change, no
// request is made.
type Writer struct {
	podclient.Clocked
}

// NewWriter returns a Writer using client. clk stamps lastTransitionTime;
// nil means the real clock.
func NewWriter(client kubernetes.Interface, clk clock.PassiveClock) *Writer {
	return &Writer{Clocked: podclient.NewClocked(client, clk)}
}

// AddNotReadyKey holds the pod NotReady under key (see the package function).
// It returns the pod as written, or nil when nothing needed writing.
func (w *Writer) AddNotReadyKey(ctx context.Context, pod *corev1.Pod, key Key) (*corev1.Pod, error) {
	return w.Update(ctx, pod, []Key{key}, nil)
}

// RemoveNotReadyKey releases key (see the package function). It returns the
// pod as written, or nil when nothing needed writing.
func (w *Writer) RemoveNotReadyKey(ctx context.Context, pod *corev1.Pod, key Key) (*corev1.Pod, error) {
	return w.Update(ctx, pod, nil, []Key{key})
}

// Update removes then adds keys in one status write (see Apply). It returns
// the pod as the API server returned it after the write, or nil when nothing
// needed writing. Errors other than Conflict (e.g. NotFound) are returned
// as is.
func (w *Writer) Update(ctx context.Context, pod *corev1.Pod, add, remove []Key) (*corev1.Pod, error) {
	cur := pod
	var written *corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		written = nil
		changed, conds := Apply(cur, add, remove, w.Clock.Now())
		if !changed {
			return nil
		}
		next := cur.DeepCopy()
		next.Status.Conditions = conds
		got, err := w.Pods.PatchStatus(ctx, cur, next)
		if apierrors.IsConflict(err) {
			fresh, getErr := w.Fresh(ctx, pod)
			if getErr != nil {
				return getErr
			}
			cur = fresh
			return err
		}
		if err != nil {
			return err
		}
		written = got
		return nil
	})
	return written, err
}
