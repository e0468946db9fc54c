package controller

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// Image pre-download defaults (reference §1.1 Reconcile step 5).
const (
	defaultPreDownloadTimeoutSeconds = 300
	preDownloadTTLSeconds            = 600
	// preDownloadMinReplicas: smaller CloneSets roll out too quickly for a
	// pre-download to pay off.
	preDownloadMinReplicas = 3
)

// preDownload (gate PreDownloadImageForInPlaceUpdate) creates, once per
// update revision of an in-place rollout, one ImagePullJob per changed
// container image so nodes of not-yet-updated pods can pull it ahead of the
// update, and deletes the jobs once the rollout has converged. The decision is
// recorded on the revision (labels apps.kruise.io/pre-predownload-created /
// apps.kruise.io/image-predownload-ignored). Failures only cost the
// optimisation: they are logged and reported as events, never fail the sync.
func (c *Controller) preDownload(ctx context.Context, st *syncState) {
	if c.jobs == nil {
		return
	}
	logger := klog.FromContext(ctx)
	if st.current.Name == st.update.Name {
		if err := c.deletePreDownloadJobs(ctx, st); err != nil {
			logger.Error(err, "Delete image pre-download jobs")
		}
		return
	}
	if st.update.Labels[pub.ImagePreDownloadCreatedKey] != "" || st.update.Labels[pub.ImagePreDownloadIgnoredKey] != "" {
		return
	}
	images, ok := preDownloadImages(st)
	if !ok {
		c.labelRevision(ctx, st, pub.ImagePreDownloadIgnoredKey)
		return
	}
	if minReady := annotationInt(st.cs, pub.ImagePreDownloadMinUpdatedReadyPods, 0); int(st.cs.Status.UpdatedReadyReplicas) < minReady {
		return
	}
	for container, image := range images {
		job := newImagePullJob(st, container, image)
		if _, err := c.client.AppsV1alpha1().ImagePullJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			c.recorder.Eventf(st.cs, corev1.EventTypeWarning, "FailedCreateImagePullJob", "failed to create ImagePullJob %s: %v", job.Name, err)
			return
		}
		c.recorder.Eventf(st.cs, corev1.EventTypeNormal, "CreatedImagePullJob", "created ImagePullJob %s for image %s", job.Name, image)
	}
	c.labelRevision(ctx, st, pub.ImagePreDownloadCreatedKey)
}

// preDownloadImages returns the new image of each changed container, or
// false when a pre-download is not worth it: recreate updates, at most 3
// replicas, a rollout that may take every pod at once, or a change that is
// not in-place-able or changes no image.
func preDownloadImages(st *syncState) (map[string]string, bool) {
	cs := st.cs
	l := resolveLimits(&cs.Spec)
	if cs.Spec.UpdateStrategy.Type == appsv1alpha1.RecreateCloneSetUpdateStrategyType || cs.Spec.UpdateStrategy.Type == "" ||
		l.replicas <= preDownloadMinReplicas || (l.partition == 0 && l.maxUnavailable >= l.replicas) {
		return nil, false
	}
	spec, ok := inplace.Diff(st.current.Data.Raw, st.update.Data.Raw)
	if !ok || len(spec.ContainerImages) == 0 {
		return nil, false
	}
	return spec.ContainerImages, true
}

func newImagePullJob(st *syncState, container, image string) *appsv1alpha1.ImagePullJob {
	cs := st.cs
	name := st.update.Name + "-" + container
	if len(name) > validation.DNS1123SubdomainMaxLength {
		name = name[:validation.DNS1123SubdomainMaxLength]
	}
	sel := cs.Spec.Selector.DeepCopy()
	sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: pub.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn,
		Values: []string{st.update.Name, revision.ShortHash(st.update.Name)},
	})
	parallelism := intstr.FromInt32(int32(annotationInt(cs, pub.ImagePreDownloadParallelismKey, 1)))
	timeout := int32(annotationInt(cs, pub.ImagePreDownloadTimeoutSecondsKey, defaultPreDownloadTimeoutSeconds))
	backoff, ttl := int32(1), int32(preDownloadTTLSeconds)
	return &appsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       cs.Namespace,
			OwnerReferences: []metav1.OwnerReference{controllerRef(cs)},
		},
		Spec: appsv1alpha1.ImagePullJobSpec{
			Image: image,
			ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
				PodSelector:      &appsv1alpha1.ImagePullJobPodSelector{LabelSelector: *sel},
				Parallelism:      &parallelism,
				PullPolicy:       &appsv1alpha1.PullPolicy{TimeoutSeconds: &timeout, BackoffLimit: &backoff},
				CompletionPolicy: appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Always, TTLSecondsAfterFinished: &ttl},
			},
		},
	}
}

// annotationInt reads a positive integer annotation of the CloneSet.
func annotationInt(cs *appsv1alpha1.CloneSet, key string, def int) int {
	if v, err := strconv.Atoi(cs.Annotations[key]); err == nil && v > 0 {
		return v
	}
	return def
}

func (c *Controller) labelRevision(ctx context.Context, st *syncState, key string) {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, key)
	out, err := c.kube.AppsV1().ControllerRevisions(st.update.Namespace).Patch(ctx, st.update.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Label revision", "revision", klog.KObj(st.update), "label", key)
		return
	}
	c.rvExp.Expect(out)
}

func (c *Controller) deletePreDownloadJobs(ctx context.Context, st *syncState) error {
	objs, err := controller.ByOwnerUID(c.jobs, st.cs.UID)
	if err != nil {
		return err
	}
	for _, o := range objs {
		job := o.(*appsv1alpha1.ImagePullJob)
		if err := c.client.AppsV1alpha1().ImagePullJobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete ImagePullJob %s: %w", job.Name, err)
		}
	}
	return nil
}
