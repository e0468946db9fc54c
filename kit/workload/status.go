package workload

import (
	"context"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

// StatusWrite is one status write of a workload.
type StatusWrite[S any] struct {
	Key types.NamespacedName
	Now time.Time
	// Cur is the cached status, Next the computed one.
	Cur, Next S
	// CountersOnly reports whether next differs from cur only in pod
	// counters: such a write is paced (Spec.StatusInterval). Nil: never.
	CountersOnly func(cur, next S) bool
	// Requeue gets the wake-up for a write held back by the pacer.
	Requeue *controller.Requeue
}

// WriteStatus writes w.Next through write (StatusUpdate: it deep-copies the
// cached object, sets the status and calls UpdateStatus) when it differs from
// w.Cur, unless it is a counters-only change the pacer holds back (the
// workload is then requeued for when it may go, and written with whatever
// the counters are by then). It returns the written object, or the zero O
// when nothing was written; the write is recorded in RV.
func WriteStatus[O metav1.Object, S any](ctx context.Context, b *Base, w StatusWrite[S], write func(context.Context, S) (O, error)) (O, error) {
	var none O
	if apiequality.Semantic.DeepEqual(w.Cur, w.Next) {
		return none, nil
	}
	if b.Pacer != nil && w.CountersOnly != nil && w.CountersOnly(w.Cur, w.Next) {
		if d := b.Pacer.Wait(w.Key, w.Now); d > 0 {
			w.Requeue.After(d)
			return none, nil
		}
	}
	out, err := write(ctx, w.Next)
	if err != nil {
		return none, fmt.Errorf("update status: %w", err)
	}
	b.RV.Expect(out)
	if b.Pacer != nil {
		b.Pacer.Wrote(w.Key, w.Now)
	}
	return out, nil
}

// StatusClient is the status side of a typed client of one workload kind
// (e.g. the generated CloneSetInterface).
type StatusClient[O any] interface {
	UpdateStatus(ctx context.Context, obj O, opts metav1.UpdateOptions) (O, error)
}

// StatusUpdate is the write WriteStatus takes, for a typed client: a deep
// copy of the cached obj (never modified itself) gets the status through set
// and goes out with UpdateStatus.
func StatusUpdate[O interface{ DeepCopy() O }, S any](client StatusClient[O], obj O, set func(O, S)) func(context.Context, S) (O, error) {
	return func(ctx context.Context, s S) (O, error) {
		cp := obj.DeepCopy()
		set(cp, s)
		return client.UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	}
}

// StatusSelector is a workload's status.labelSelector (what the scale
// subresource reads): the selector in its string form, "" when it has none
// or cannot be formatted.
func StatusSelector(sel *metav1.LabelSelector) string {
	s := metav1.FormatLabelSelector(sel)
	if s == "<none>" || s == "<error>" {
		return ""
	}
	return s
}
