package controller

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// StatusUpdater is the status side of a typed client of one kind (e.g. the
// generated SidecarSetInterface).
type StatusUpdater[O any] interface {
	UpdateStatus(ctx context.Context, obj O, opts metav1.UpdateOptions) (O, error)
}

// WriteStatus writes next as obj's status, unless obj (the cached object,
// never modified) already has it: a deep copy of obj gets next in the field
// status points at and goes out with UpdateStatus; the written object's
// resource version is recorded in written, so that the next sync waits for
// the cache to show it. It reports whether it wrote; the error is the
// client's, for the caller to wrap.
func WriteStatus[O interface {
	metav1.Object
	DeepCopy() O
}, S any](ctx context.Context, client StatusUpdater[O], obj O, status func(O) *S, next S, written *expectations.ResourceVersion) (bool, error) {
	if apiequality.Semantic.DeepEqual(*status(obj), next) {
		return false, nil
	}
	cp := obj.DeepCopy()
	*status(cp) = next
	out, err := client.UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, err
	}
	written.Expect(out)
	return true, nil
}
