package imagepulljob

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// Defaults OpenKruise applies to the tags it writes for a job (pkg/controller/imagepulljob's utils).
const (
	defaultTimeoutSeconds                = int32(600)
	defaultBackoffLimit                  = int32(3)
	defaultTTLSecondsForNever            = int32(24 * 3600)
	ttlJitterForNever                    = int32(600) // ± around the 24h
	ttlJitterForAlways                   = int32(300) // + on top
	defaultActiveDeadlineSecondsForNever = int64(1800)
)

// imageNameTag splits an image reference as the NodeImage keys it: the familiar name (docker.io/library/ dropped)
// and the tag, "latest" when none, or the digest ("sha256:…") when the reference has one (a digest wins over a tag).
func imageNameTag(image string) (name, tag string, err error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", "", fmt.Errorf("spec.image %q: %w", image, err)
	}
	if d, ok := named.(reference.Digested); ok {
		return reference.FamiliarName(named), d.Digest().String(), nil
	}
	tagged, _ := reference.TagNameOnly(named).(reference.Tagged)
	return reference.FamiliarName(named), tagged.Tag(), nil
}

// PullReference is the reference the node agent pulls for spec.images[name].tags[].tag: "name@tag" for a digest,
// "name:tag" otherwise.
func PullReference(name, tag string) string {
	if strings.Contains(tag, ":") {
		return name + "@" + tag
	}
	return name + ":" + tag
}

// ownerRef is the record of the job in the tags it asked for.
func ownerRef(job *appsv1beta1.ImagePullJob) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: appsv1beta1.SchemeGroupVersion.String(), Kind: "ImagePullJob",
		Namespace: job.Namespace, Name: job.Name, UID: job.UID}
}

// tagPullPolicy is the pullPolicy OpenKruise writes for the job's tag: the job's timeout and backoff; with
// completionPolicy Never a deadline of max(1800 s, timeout) and a TTL of 24 h ± 10 min; otherwise the job's
// activeDeadlineSeconds and a TTL of the job's ttlSecondsAfterFinished, else its activeDeadlineSeconds, else
// timeout × backoffLimit, plus up to 5 min. jitter(n) returns a number in [0, n) (spreads the removals).
func tagPullPolicy(spec *appsv1beta1.ImagePullJobSpec, jitter func(n int32) int32) *appsv1beta1.ImageTagPullPolicy {
	timeout, backoff := defaultTimeoutSeconds, defaultBackoffLimit
	if spec.PullPolicy != nil {
		timeout = ptr.Deref(spec.PullPolicy.TimeoutSeconds, timeout)
		backoff = ptr.Deref(spec.PullPolicy.BackoffLimit, backoff)
	}
	out := &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To(timeout), BackoffLimit: ptr.To(backoff)}
	cp := spec.CompletionPolicy
	if cp.Type == appsv1beta1.Never {
		out.TTLSecondsAfterFinished = ptr.To(defaultTTLSecondsForNever + jitter(2*ttlJitterForNever) - ttlJitterForNever)
		out.ActiveDeadlineSeconds = ptr.To(max(defaultActiveDeadlineSecondsForNever, int64(timeout)))
		return out
	}
	var ttl int32
	switch {
	case cp.TTLSecondsAfterFinished != nil:
		ttl = *cp.TTLSecondsAfterFinished
	case cp.ActiveDeadlineSeconds != nil:
		ttl = int32(*cp.ActiveDeadlineSeconds)
	default:
		ttl = timeout * backoff
	}
	out.TTLSecondsAfterFinished = ptr.To(ttl + jitter(ttlJitterForAlways))
	out.ActiveDeadlineSeconds = cp.ActiveDeadlineSeconds
	return out
}

// parallelism is how many nodes may pull at once: spec.parallelism (default 1), a percentage of desired rounded up.
// OpenKruise reads a percentage as 0 and never pulls; Flotilla scales it.
func parallelism(spec *appsv1beta1.ImagePullJobSpec, desired int) int {
	if spec.Parallelism == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(spec.Parallelism, desired, true)
	if err != nil {
		return 0
	}
	return n
}

// addJobTag writes the job's tag into ni (a copy the caller owns) as OpenKruise does, and reports whether ni
// changed:
//   - a tag the job already owns gets only the pull secrets it lacks;
//   - a tag another job owns is taken over for a new round: version+1, createdAt now, the job added to its
//     owners, the job's imagePullPolicy;
//   - a new tag starts at the version after the one the node last reported for it (0 if none).
//
// The image's sandboxConfig becomes the job's.
func addJobTag(ni *appsv1beta1.NodeImage, job *appsv1beta1.ImagePullJob, name, tag string, secrets []appsv1beta1.ReferenceObject,
	policy *appsv1beta1.ImageTagPullPolicy, now metav1.Time) bool {
	if ni.Spec.Images == nil {
		ni.Spec.Images = map[string]appsv1beta1.ImageSpec{}
	}
	img, existed := ni.Spec.Images[name]
	changed := !existed
	if !equalSandbox(img.SandboxConfig, job.Spec.SandboxConfig) {
		img.SandboxConfig = job.Spec.SandboxConfig.DeepCopy()
		changed = true
	}
	for _, s := range secrets {
		if !hasSecret(img.PullSecrets, s) {
			img.PullSecrets = append(img.PullSecrets, s)
			changed = true
		}
	}
	ref := ownerRef(job)
	i := slices.IndexFunc(img.Tags, func(t appsv1beta1.ImageTagSpec) bool { return t.Tag == tag })
	switch {
	case i >= 0 && slices.ContainsFunc(img.Tags[i].OwnerReferences, func(r corev1.ObjectReference) bool { return r.UID == job.UID }):
	case i >= 0:
		t := &img.Tags[i]
		t.Version++
		t.OwnerReferences = append(t.OwnerReferences, ref)
		t.CreatedAt = &now
		t.ImagePullPolicy = job.Spec.ImagePullPolicy
		changed = true
	default:
		img.Tags = append(img.Tags, appsv1beta1.ImageTagSpec{Tag: tag, Version: reportedVersion(ni, name, tag) + 1,
			PullPolicy: policy, OwnerReferences: []corev1.ObjectReference{ref}, CreatedAt: &now, ImagePullPolicy: job.Spec.ImagePullPolicy})
		slices.SortFunc(img.Tags, func(a, b appsv1beta1.ImageTagSpec) int { return strings.Compare(a.Tag, b.Tag) })
		changed = true
	}
	ni.Spec.Images[name] = img
	return changed
}

// hasSecret: refs names s (namespace and name; the mode does not matter).
func hasSecret(refs []appsv1beta1.ReferenceObject, s appsv1beta1.ReferenceObject) bool {
	return slices.ContainsFunc(refs, func(r appsv1beta1.ReferenceObject) bool { return r.Namespace == s.Namespace && r.Name == s.Name })
}

// reportedVersion is the version the node last reported for the tag, -1 if none.
func reportedVersion(ni *appsv1beta1.NodeImage, name, tag string) int64 {
	for _, t := range ni.Status.ImageStatuses[name].Tags {
		if t.Tag == tag {
			return t.Version
		}
	}
	return -1
}

func equalSandbox(a, b *appsv1beta1.SandboxConfig) bool {
	if a == nil || b == nil {
		return a == b
	}
	return maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations)
}
