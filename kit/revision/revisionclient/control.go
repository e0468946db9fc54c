package revisionclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/flotilla-dev/flotilla/kit/revision"
)

// maxCreateAttempts bounds Create's name-collision loop. Each
// collision needs another object that happens to hash to the same name, so
// hitting the bound means something else is creating revisions under the
// parent's names; the caller's retry (with the bumped collision count) takes
// over.
const maxCreateAttempts = 10

// New returns the revision.Control that writes through client.
func New(client kubernetes.Interface) revision.Control {
	return &clientControl{client: client}
}

type clientControl struct {
	client kubernetes.Interface
}

func (c *clientControl) Create(ctx context.Context, parent metav1.Object, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, errors.New("revision: Create needs a non-nil collisionCount")
	}
	ns := parent.GetNamespace()
	revs := c.client.AppsV1().ControllerRevisions(ns)
	clone := rev.DeepCopy()
	clone.Namespace = ns
	if clone.Labels == nil {
		clone.Labels = map[string]string{}
	}
	for range maxCreateAttempts {
		hash := revision.Hash(clone.Data.Raw, collisionCount)
		clone.Name = revision.Name(parent.GetName(), hash)
		clone.Labels[revision.HashLabel] = hash
		created, err := revs.Create(ctx, clone, metav1.CreateOptions{})
		if err == nil {
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("revision: creating %s/%s: %w", ns, clone.Name, err)
		}
		existing, err := revs.Get(ctx, clone.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // deleted in between: try the same name again
		}
		if err != nil {
			return nil, fmt.Errorf("revision: reading %s/%s after a name collision: %w", ns, clone.Name, err)
		}
		if bytes.Equal(existing.Data.Raw, clone.Data.Raw) && metav1.IsControlledBy(existing, parent) {
			return existing, nil
		}
		*collisionCount++
	}
	return nil, fmt.Errorf("revision: no free name for a revision of %s/%s after %d attempts (collisionCount %d)",
		ns, parent.GetName(), maxCreateAttempts, *collisionCount)
}

func (c *clientControl) UpdateRevision(ctx context.Context, rev *appsv1.ControllerRevision, newRevision int64) (*appsv1.ControllerRevision, error) {
	revs := c.client.AppsV1().ControllerRevisions(rev.Namespace)
	clone := rev.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if clone.Revision == newRevision {
			return nil
		}
		clone.Revision = newRevision
		updated, err := revs.Update(ctx, clone, metav1.UpdateOptions{})
		if err == nil {
			clone = updated
			return nil
		}
		if apierrors.IsConflict(err) {
			latest, getErr := revs.Get(ctx, clone.Name, metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			clone = latest
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("revision: setting .revision of %s/%s to %d: %w", rev.Namespace, rev.Name, newRevision, err)
	}
	return clone, nil
}

func (c *clientControl) Delete(ctx context.Context, rev *appsv1.ControllerRevision) error {
	opts := metav1.DeleteOptions{}
	if rev.UID != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(rev.UID))
	}
	err := c.client.AppsV1().ControllerRevisions(rev.Namespace).Delete(ctx, rev.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("revision: deleting %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	return nil
}
