package controller

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// Lookup opens a sync: it reads the object key names through a namespaced
// lister's Get (e.g. lister.Widgets(key.Namespace).Get). found is false, with
// no error, when the cache no longer has it: deleted, nothing to reconcile
// (what it owns goes with it by garbage collection). Any other error is
// wrapped with what and key.
func Lookup[T any](what string, key types.NamespacedName, get func(name string) (T, error)) (obj T, found bool, err error) {
	obj, err = get(key.Name)
	if apierrors.IsNotFound(err) {
		var zero T
		return zero, false, nil
	}
	if err != nil {
		return obj, false, fmt.Errorf("get %s %s: %w", what, key, err)
	}
	return obj, true, nil
}
