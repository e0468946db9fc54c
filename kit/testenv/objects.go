package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// Client is what the helpers of Objects use of a generated typed client for
// one kind in one namespace (clientset.AppsV1alpha1().CloneSets(ns),
// kube.BatchV1().Jobs(ns), ...); T is the kind's pointer type.
type Client[T metav1.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Objects are an integration test's create/get/modify/wait helpers for one
// kind in one namespace. A failed API call fails the test; WaitFor polls with
// Eventually (no sleeps in the test).
type Objects[T metav1.Object] struct {
	t       testing.TB
	client  Client[T]
	timeout time.Duration
	// Describe renders the last object seen in WaitFor's failure message;
	// nil: the object as JSON.
	Describe func(T) string
}

// ObjectsOf returns the helpers over client; WaitFor gives up after timeout.
func ObjectsOf[T metav1.Object](t testing.TB, client Client[T], timeout time.Duration) *Objects[T] {
	return &Objects[T]{t: t, client: client, timeout: timeout}
}

// Create creates obj and returns what the API server stored.
func (o *Objects[T]) Create(obj T) T {
	o.t.Helper()
	out, err := o.client.Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		o.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	return out
}

// Get returns the named object from the API server.
func (o *Objects[T]) Get(name string) T {
	o.t.Helper()
	out, err := o.client.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		o.t.Fatalf("get %T %s: %v", out, name, err)
	}
	return out
}

// Modify reads the named object, applies mutate and updates it, again from
// a fresh read on a conflict (a controller writes the same object); it
// returns the updated object.
func (o *Objects[T]) Modify(name string, mutate func(T)) T {
	o.t.Helper()
	return o.modify(name, mutate, o.client.Update)
}

// ModifyStatus is Modify through the status subresource (playing another
// controller, e.g. finishing a child).
func (o *Objects[T]) ModifyStatus(name string, mutate func(T)) T {
	o.t.Helper()
	return o.modify(name, mutate, o.client.UpdateStatus)
}

func (o *Objects[T]) modify(name string, mutate func(T), update func(context.Context, T, metav1.UpdateOptions) (T, error)) T {
	o.t.Helper()
	var out T
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := o.client.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(obj) // a fresh object from the API server: the test may change it
		out, err = update(context.Background(), obj, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		o.t.Fatalf("modify %T %s: %v", out, name, err)
	}
	return out
}

// WaitFor polls the named object until cond holds and returns it; it fails
// the test after the timeout with what (what the test waited for) and the
// last object seen. A missing object is waited for too.
func (o *Objects[T]) WaitFor(name, what string, cond func(T) bool) T {
	o.t.Helper()
	var last T
	Eventually(o.t, o.timeout, func() (bool, error) {
		obj, err := o.client.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("%s: %w", what, err)
		}
		last = obj
		if cond(obj) {
			return true, nil
		}
		return false, fmt.Errorf("%s %s: %s (last: %s)", kindOf(obj), name, what, o.describe(last))
	})
	return last
}

// WaitGone polls until the named object no longer exists (a Get answers
// NotFound); it fails the test after the timeout.
func (o *Objects[T]) WaitGone(name string) {
	o.t.Helper()
	Eventually(o.t, o.timeout, func() (bool, error) {
		obj, err := o.client.Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("%s %s still exists", kindOf(obj), name)
	})
}

func (o *Objects[T]) describe(obj T) string {
	if o.Describe != nil {
		return o.Describe(obj)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Sprintf("%+v", obj)
	}
	return string(b)
}

func kindOf(obj any) string { return fmt.Sprintf("%T", obj) }

// Live returns the items of a List result that are not being deleted (no
// deletionTimestamp), in order: what a test counts as the objects that exist.
func Live[T any, P interface {
	*T
	GetDeletionTimestamp() *metav1.Time
}](items []T) []T {
	var out []T
	for i := range items {
		if P(&items[i]).GetDeletionTimestamp() == nil {
			out = append(out, items[i])
		}
	}
	return out
}
