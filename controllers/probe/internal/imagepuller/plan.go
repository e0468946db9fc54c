package imagepuller

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// OpenKruise's daemon defaults for a tag without a pullPolicy, and its retry backoff (1 s doubling to 30 s).
const (
	defaultTimeout      = 10 * time.Minute
	defaultBackoffLimit = 3
	firstBackoff        = time.Second
	maxBackoff          = 30 * time.Second
)

// tagKey names one task: an image (as the NodeImage keys it, without tag) and one of its tags.
type tagKey struct{ Image, Tag string }

// reference is what the runtime pulls for the key: "<image>@<tag>" when the tag is a digest ("sha256:…"),
// "<image>:<tag>" otherwise.
func (k tagKey) reference() string {
	if strings.Contains(k.Tag, ":") {
		return k.Image + "@" + k.Tag
	}
	return k.Image + ":" + k.Tag
}

// plan is what a sync does to the tasks.
type plan struct {
	// Start: tags to pull, at their spec's version (each replaces a task in Stop, if any).
	Start []tagKey
	// Stop: tasks whose tag left the spec or whose version changed; their pull is cancelled, their status dropped.
	Stop []tagKey
	// Adopt: tags the status already reports finished at the spec's version and no task holds (an agent restart):
	// kept as they are, not pulled again.
	Adopt map[tagKey]appsv1beta1.ImageTagStatus
}

// decide compares the spec with the tasks the agent holds (key → version) and the status it last wrote: a tag
// at a version no task holds is pulled unless the status says that version finished (completionTime set), as
// kruise-daemon does. A tag the status reports Pulling or Waiting with no task holding it was in flight when the
// agent stopped: it is pulled again, never taken as done.
func decide(spec *appsv1beta1.NodeImageSpec, status *appsv1beta1.NodeImageStatus, tasks map[tagKey]int64) plan {
	var p plan
	wanted := map[tagKey]bool{}
	for image, img := range spec.Images {
		for _, t := range img.Tags {
			k := tagKey{image, t.Tag}
			wanted[k] = true
			if v, ok := tasks[k]; ok {
				if v == t.Version {
					continue
				}
				p.Stop = append(p.Stop, k)
			}
			if st, ok := finished(status, k, t.Version); ok {
				if p.Adopt == nil {
					p.Adopt = map[tagKey]appsv1beta1.ImageTagStatus{}
				}
				p.Adopt[k] = st
				continue
			}
			p.Start = append(p.Start, k)
		}
	}
	for k := range tasks {
		if !wanted[k] {
			p.Stop = append(p.Stop, k)
		}
	}
	byKey := func(a, b tagKey) int { return strings.Compare(a.Image+"\x00"+a.Tag, b.Image+"\x00"+b.Tag) }
	slices.SortFunc(p.Start, byKey)
	slices.SortFunc(p.Stop, byKey)
	return p
}

// finished returns the status of k at version if it has a completionTime.
func finished(status *appsv1beta1.NodeImageStatus, k tagKey, version int64) (appsv1beta1.ImageTagStatus, bool) {
	for _, t := range status.ImageStatuses[k.Image].Tags {
		if t.Tag == k.Tag && t.Version == version && t.CompletionTime != nil {
			return t, true
		}
	}
	return appsv1beta1.ImageTagStatus{}, false
}

// buildStatus is the NodeImage status kruise-daemon writes: desired counts the spec's tags; per image, the
// status of each spec tag a task holds, sorted by tag; the counters by phase. firstSyncStatus is the manager's
// and is kept.
func buildStatus(spec *appsv1beta1.NodeImageSpec, tasks map[tagKey]appsv1beta1.ImageTagStatus, prev *appsv1beta1.NodeImageStatus) appsv1beta1.NodeImageStatus {
	out := appsv1beta1.NodeImageStatus{FirstSyncStatus: prev.FirstSyncStatus}
	for image, img := range spec.Images {
		out.Desired += int32(len(img.Tags))
		var tags []appsv1beta1.ImageTagStatus
		for _, t := range img.Tags {
			st, ok := tasks[tagKey{image, t.Tag}]
			if !ok {
				continue
			}
			tags = append(tags, st)
			switch st.Phase {
			case appsv1beta1.ImagePhaseSucceeded:
				out.Succeeded++
			case appsv1beta1.ImagePhaseFailed:
				out.Failed++
			case appsv1beta1.ImagePhasePulling:
				out.Pulling++
			case appsv1beta1.ImagePhaseWaiting:
				out.Waiting++
			}
		}
		if len(tags) == 0 {
			continue
		}
		slices.SortFunc(tags, func(a, b appsv1beta1.ImageTagStatus) int { return strings.Compare(a.Tag, b.Tag) })
		if out.ImageStatuses == nil {
			out.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
		}
		out.ImageStatuses[image] = appsv1beta1.ImageStatus{Tags: tags}
	}
	return out
}

// attempts is a tag's pull policy as the worker applies it.
type attempts struct {
	// Timeout bounds one PullImage call.
	Timeout time.Duration
	// Retries after the first failure (backoffLimit; a negative one is the default).
	Retries int
	// Deadline, if not zero: no attempt starts after it, and none runs past it.
	Deadline time.Time
	// SkipPresent: an image the node has counts as pulled (imagePullPolicy IfNotPresent, or none: the API's
	// documented default; kruise-daemon's code skips only on an explicit IfNotPresent, which its manager always
	// writes).
	SkipPresent bool
}

// attemptsFor reads spec's pullPolicy with kruise-daemon's defaults (10 min per attempt, 3 retries). The
// activeDeadlineSeconds counts from the tag's createdAt, which the manager sets when it asks for a version, so a
// restarted agent does not grant a pull a new deadline; without createdAt it counts from start.
func attemptsFor(spec appsv1beta1.ImageTagSpec, start time.Time) attempts {
	a := attempts{Timeout: defaultTimeout, Retries: defaultBackoffLimit, SkipPresent: spec.ImagePullPolicy != appsv1beta1.PullAlways}
	if pp := spec.PullPolicy; pp != nil {
		if pp.TimeoutSeconds != nil {
			a.Timeout = time.Duration(*pp.TimeoutSeconds) * time.Second
		}
		if b := ptr.Deref(pp.BackoffLimit, defaultBackoffLimit); b >= 0 {
			a.Retries = int(b)
		}
		if pp.ActiveDeadlineSeconds != nil {
			from := start
			if spec.CreatedAt != nil {
				from = spec.CreatedAt.Time
			}
			a.Deadline = from.Add(time.Duration(*pp.ActiveDeadlineSeconds) * time.Second)
		}
	}
	return a
}

// attemptTimeout is the timeout of an attempt starting at now, and false when the deadline has passed.
func (a attempts) attemptTimeout(now time.Time) (time.Duration, bool) {
	if a.Deadline.IsZero() {
		return a.Timeout, true
	}
	left := a.Deadline.Sub(now)
	if left <= 0 {
		return 0, false
	}
	return min(a.Timeout, left), true
}

// backoff is the wait before retry i (0-based): 1 s, 2 s, 4 s, … capped at 30 s.
func backoff(i int) time.Duration {
	d := firstBackoff
	for ; i > 0 && d < maxBackoff; i-- {
		d *= 2
	}
	return min(d, maxBackoff)
}

// now is a status timestamp: metav1.Time keeps seconds, so the in-memory status compares equal to what the API
// server gives back and an unchanged status is never written again.
func now(t time.Time) *metav1.Time {
	return ptr.To(metav1.NewTime(t).Rfc3339Copy())
}
