package imagepulljob

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// ProtectionFinalizer is OpenKruise's finalizer on a job with pull secrets: the job goes only once the copies of
// its secrets are released.
const ProtectionFinalizer = "apps.kruise.io/deletion-protection"

func hasFinalizer(job *appsv1beta1.ImagePullJob) bool {
	return slices.Contains(job.Finalizers, ProtectionFinalizer)
}

func (c *Controller) addFinalizer(ctx context.Context, job *appsv1beta1.ImagePullJob) error {
	out := job.DeepCopy()
	out.Finalizers = append(out.Finalizers, ProtectionFinalizer)
	return c.updateJob(ctx, out, "add finalizer to")
}

func (c *Controller) removeFinalizer(ctx context.Context, job *appsv1beta1.ImagePullJob) error {
	out := job.DeepCopy()
	out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool { return f == ProtectionFinalizer })
	return c.updateJob(ctx, out, "remove finalizer from")
}

// updateJob writes the job (finalizers); its resourceVersion makes a stale copy fail.
func (c *Controller) updateJob(ctx context.Context, out *appsv1beta1.ImagePullJob, what string) error {
	written, err := c.Client.AppsV1beta1().ImagePullJobs(out.Namespace).Update(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("%s ImagePullJob %s/%s: %w", what, out.Namespace, out.Name, err)
	}
	c.written.Expect(written)
	return nil
}

// delete removes a job whose TTL has passed (UID precondition: never a job recreated under the same name).
func (c *Controller) delete(ctx context.Context, job *appsv1beta1.ImagePullJob) error {
	klog.FromContext(ctx).Info("Deleting ImagePullJob: ttlSecondsAfterFinished passed", "imagePullJob", klog.KObj(job))
	err := c.Client.AppsV1beta1().ImagePullJobs(job.Namespace).Delete(ctx, job.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(job.UID)}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ImagePullJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// writeNodeImages writes the job's tag into the named NodeImages (cached copies, deep-copied here).
func (c *Controller) writeNodeImages(ctx context.Context, job *appsv1beta1.ImagePullJob, names []string, image, tag string,
	secrets []appsv1beta1.ReferenceObject, now metav1.Time) error {
	policy := tagPullPolicy(&job.Spec, c.jitter)
	for _, n := range names {
		cached, err := c.nodeImages.Get(n)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("get NodeImage %s: %w", n, err)
		}
		ni := cached.DeepCopy()
		if !addJobTag(ni, job, image, tag, secrets, policy.DeepCopy(), now) {
			continue
		}
		out, err := c.Client.AppsV1beta1().NodeImages().Update(ctx, ni, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("write %s:%s of ImagePullJob %s/%s into NodeImage %s: %w", image, tag, job.Namespace, job.Name, n, err)
		}
		c.niWritten.Expect(out)
		klog.FromContext(ctx).V(2).Info("Wrote image tag into NodeImage", "imagePullJob", klog.KObj(job), "nodeImage", n, "image", image, "tag", tag)
	}
	return nil
}

// claimSecrets makes the job's pull secrets readable by the node agent and returns the NodeImage references to
// them: secrets of the agent's own namespace as they are, the others as copies there (one per source secret,
// shared by the jobs naming it). A secret that does not exist is skipped with a Warning event: the pull goes on
// without it, as in OpenKruise.
func (c *Controller) claimSecrets(ctx context.Context, job *appsv1beta1.ImagePullJob) ([]appsv1beta1.ReferenceObject, error) {
	var refs []appsv1beta1.ReferenceObject
	ns := c.opts.AgentNamespace
	for _, name := range job.Spec.PullSecrets {
		if job.Namespace == ns {
			refs = append(refs, appsv1beta1.ReferenceObject{Namespace: ns, Name: name})
			continue
		}
		src, err := c.Kube.CoreV1().Secrets(job.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			c.Recorder.Eventf(job, corev1.EventTypeWarning, "PullSecretNotFound", "spec.pullSecrets: secret %s/%s not found", job.Namespace, name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get pull secret %s/%s: %w", job.Namespace, name, err)
		}
		cpName := copyName(src.Namespace, src.Name)
		cp, err := c.Kube.CoreV1().Secrets(ns).Get(ctx, cpName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cp, err = nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("get copy %s/%s of pull secret %s/%s: %w", ns, cpName, job.Namespace, name, err)
		}
		if cp != nil && cp.Annotations[SecretAnnotationSourceKey] != src.Namespace+"/"+src.Name {
			return nil, fmt.Errorf("secret %s/%s is not the copy of %s/%s", ns, cpName, src.Namespace, src.Name)
		}
		if err := c.writeCopy(ctx, claimCopy(src, cp, ns, job.Namespace+"/"+job.Name), cp == nil); err != nil {
			return nil, err
		}
		refs = append(refs, appsv1beta1.ReferenceObject{Namespace: ns, Name: cpName, Mode: appsv1beta1.ReferenceObjectModeBatch})
	}
	return refs, nil
}

func (c *Controller) writeCopy(ctx context.Context, s *corev1.Secret, create bool) error {
	var err error
	switch {
	case s == nil:
		return nil
	case create:
		_, err = c.Kube.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
	default:
		_, err = c.Kube.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write pull secret copy %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// releaseSecrets drops the job from the copies it used, deleting those no job uses any more.
func (c *Controller) releaseSecrets(ctx context.Context, job *appsv1beta1.ImagePullJob) error {
	ns := c.opts.AgentNamespace
	list, err := c.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pull secret copies in %s: %w", ns, err)
	}
	key := job.Namespace + "/" + job.Name
	for i := range list.Items {
		s := &list.Items[i]
		if s.Annotations[SecretAnnotationSourceKey] == "" {
			continue
		}
		out, remove := releaseCopy(s, key)
		switch {
		case remove:
			err = c.Kube.CoreV1().Secrets(ns).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(s.UID), ResourceVersion: ptr.To(s.ResourceVersion)}})
			if apierrors.IsNotFound(err) {
				err = nil
			}
		case out != nil:
			err = c.writeCopy(ctx, out, false)
		}
		if err != nil {
			return fmt.Errorf("release pull secret copy %s/%s: %w", ns, s.Name, err)
		}
	}
	return nil
}
