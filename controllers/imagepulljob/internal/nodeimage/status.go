package nodeimage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// OpenKruise's manager-side failure messages, and how long the manager waits for a node to answer a tag.
const (
	msgNoResponse       = "node has not responded for a long time"
	msgDeadlineExceeded = "pulling exceeds the activeDeadlineSeconds"
	ResponseTimeout     = 10 * time.Minute
)

// failure is one tag the manager failed on the node's behalf.
type failure struct{ image, message string }

// calculateStatus is the manager's part of a NodeImage's status, as OpenKruise's nodeimage controller computes it:
// a tag the node has not answered (no status at the tag's version) ResponseTimeout after createdAt fails with
// msgNoResponse; an unfinished tag ResponseTimeout past its activeDeadlineSeconds fails with msgDeadlineExceeded.
// Tag statuses of tags no longer in spec are dropped and the counts (desired, succeeded, failed, pulling) are
// recomputed — all only when the image statuses change, so that the agent's own counts are left alone otherwise.
// wait is the time until the next timeout.
func calculateStatus(ni *appsv1beta1.NodeImage, now metav1.Time) (st appsv1beta1.NodeImageStatus, changed bool, wait time.Duration, failed []failure) {
	st = *ni.Status.DeepCopy()
	after := func(d time.Duration) {
		if d > 0 && (wait == 0 || d < wait) {
			wait = d
		}
	}
	inSpec := map[string]bool{}
	for name, img := range ni.Spec.Images {
		is := st.ImageStatuses[name]
		for _, t := range img.Tags {
			inSpec[name+":"+t.Tag] = true
			if t.CreatedAt == nil {
				continue
			}
			i := slices.IndexFunc(is.Tags, func(s appsv1beta1.ImageTagStatus) bool { return s.Tag == t.Tag })
			fail := ""
			if i < 0 || is.Tags[i].Version != t.Version {
				if left := t.CreatedAt.Add(ResponseTimeout).Sub(now.Time); left > 0 {
					after(left)
					continue
				}
				fail = msgNoResponse
			} else if is.Tags[i].CompletionTime == nil && t.PullPolicy != nil && t.PullPolicy.ActiveDeadlineSeconds != nil {
				if left := t.CreatedAt.Add(time.Duration(*t.PullPolicy.ActiveDeadlineSeconds)*time.Second + ResponseTimeout).Sub(now.Time); left > 0 {
					after(left)
					continue
				}
				fail = msgDeadlineExceeded
			}
			if fail == "" {
				continue
			}
			failedTag := appsv1beta1.ImageTagStatus{Tag: t.Tag, Phase: appsv1beta1.ImagePhaseFailed, CompletionTime: &now, Version: t.Version, Message: fail}
			if i < 0 {
				is.Tags = append(is.Tags, failedTag)
			} else {
				failedTag.Progress, failedTag.StartTime, failedTag.ImageID = is.Tags[i].Progress, is.Tags[i].StartTime, is.Tags[i].ImageID
				is.Tags[i] = failedTag
			}
			failed = append(failed, failure{image: name + ":" + t.Tag, message: fail})
		}
		if len(is.Tags) > 0 {
			if st.ImageStatuses == nil {
				st.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
			}
			slices.SortFunc(is.Tags, func(a, b appsv1beta1.ImageTagStatus) int { return strings.Compare(a.Tag, b.Tag) })
			st.ImageStatuses[name] = is
		}
	}
	if apiequality.Semantic.DeepEqual(st.ImageStatuses, ni.Status.ImageStatuses) {
		return ni.Status, false, wait, nil
	}
	recount(&st, inSpec)
	return st, !apiequality.Semantic.DeepEqual(st, ni.Status), wait, failed
}

// recount drops the statuses of tags not in spec and counts the rest by phase.
func recount(st *appsv1beta1.NodeImageStatus, inSpec map[string]bool) {
	var succeeded, failed, pulling int32
	kept := map[string]appsv1beta1.ImageStatus{}
	for name, is := range st.ImageStatuses {
		var tags []appsv1beta1.ImageTagStatus
		for _, t := range is.Tags {
			if !inSpec[name+":"+t.Tag] {
				continue
			}
			tags = append(tags, t)
			switch t.Phase {
			case appsv1beta1.ImagePhaseSucceeded:
				succeeded++
			case appsv1beta1.ImagePhaseFailed:
				failed++
			case appsv1beta1.ImagePhasePulling:
				pulling++
			}
		}
		if len(tags) > 0 {
			kept[name] = appsv1beta1.ImageStatus{Tags: tags}
		}
	}
	st.ImageStatuses = kept
	if len(kept) == 0 {
		st.ImageStatuses = nil
	}
	st.Desired = int32(len(inSpec))
	st.Succeeded, st.Failed, st.Pulling = succeeded, failed, pulling
}

// updateStatus writes st when it differs from the NodeImage's.
func (c *Controller) updateStatus(ctx context.Context, ni *appsv1beta1.NodeImage, st appsv1beta1.NodeImageStatus) error {
	_, err := controller.WriteStatus(ctx, c.Client.AppsV1beta1().NodeImages(), ni,
		func(n *appsv1beta1.NodeImage) *appsv1beta1.NodeImageStatus { return &n.Status }, st, c.written)
	if err != nil {
		return fmt.Errorf("update status of NodeImage %s: %w", ni.Name, err)
	}
	return nil
}
