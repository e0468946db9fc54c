package advancedcronjob

import (
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// outcome is where a child run stands.
type outcome int

const (
	running outcome = iota
	succeeded
	failed
)

// child is what the reconciler needs to know about one Job or BroadcastJob it created. It is a summary built
// from the cached object, so nothing here can mutate the cache.
type child struct {
	Kind        appsv1alpha1.TemplateKind
	Name        string
	UID         types.UID
	ScheduledAt time.Time // from apps.kruise.io/scheduled-at; zero when missing or malformed
	Created     time.Time
	Deleting    bool
	Outcome     outcome
}

// when orders children by their scheduled time, falling back to creation for children without the annotation.
func (c child) when() time.Time {
	if !c.ScheduledAt.IsZero() {
		return c.ScheduledAt
	}
	return c.Created
}

func (c child) ref(namespace string) corev1.ObjectReference {
	apiVersion := batchv1.SchemeGroupVersion.String()
	if c.Kind == appsv1alpha1.BroadcastJobTemplate {
		apiVersion = appsv1alpha1.SchemeGroupVersion.String()
	}
	return corev1.ObjectReference{Kind: string(c.Kind), APIVersion: apiVersion, Namespace: namespace, Name: c.Name, UID: c.UID}
}

func summarize(kind appsv1alpha1.TemplateKind, o metav1.Object, out outcome) child {
	c := child{Kind: kind, Name: o.GetName(), UID: o.GetUID(), Created: o.GetCreationTimestamp().Time,
		Deleting: o.GetDeletionTimestamp() != nil, Outcome: out}
	if v, ok := o.GetAnnotations()[pub.AdvancedCronJobScheduledAtAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			c.ScheduledAt = t
		}
	}
	return c
}

// jobOutcome reads a batch/v1 Job's terminal conditions.
func jobOutcome(j *batchv1.Job) outcome {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return succeeded
		case batchv1.JobFailed:
			return failed
		}
	}
	return running
}

// broadcastJobOutcome reads a BroadcastJob's terminal conditions, or its phase.
func broadcastJobOutcome(b *appsv1alpha1.BroadcastJob) outcome {
	for _, c := range b.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case appsv1alpha1.JobComplete:
			return succeeded
		case appsv1alpha1.JobFailed:
			return failed
		}
	}
	switch b.Status.Phase {
	case appsv1alpha1.PhaseCompleted:
		return succeeded
	case appsv1alpha1.PhaseFailed:
		return failed
	}
	return running
}

// childrenOf returns the Jobs and BroadcastJobs controlled by acj, found through the owner-UID indexes (one map
// lookup each), oldest first.
func childrenOf(acj *appsv1alpha1.AdvancedCronJob, jobs, broadcastJobs cache.Indexer) ([]child, error) {
	var out []child
	js, err := controller.Controlled[*batchv1.Job](jobs, acj)
	if err != nil {
		return nil, fmt.Errorf("list Jobs of %s: %w", acj.Name, err)
	}
	for _, j := range js {
		out = append(out, summarize(appsv1alpha1.JobTemplate, j, jobOutcome(j)))
	}
	bs, err := controller.Controlled[*appsv1alpha1.BroadcastJob](broadcastJobs, acj)
	if err != nil {
		return nil, fmt.Errorf("list BroadcastJobs of %s: %w", acj.Name, err)
	}
	for _, b := range bs {
		out = append(out, summarize(appsv1alpha1.BroadcastJobTemplate, b, broadcastJobOutcome(b)))
	}
	sortChildren(out)
	return out, nil
}

func sortChildren(cs []child) {
	sort.SliceStable(cs, func(i, j int) bool {
		if !cs[i].when().Equal(cs[j].when()) {
			return cs[i].when().Before(cs[j].when())
		}
		return cs[i].Name < cs[j].Name
	})
}

// active returns the children still running and not being deleted, oldest first.
func active(cs []child) []child {
	var out []child
	for _, c := range cs {
		if c.Outcome == running && !c.Deleting {
			out = append(out, c)
		}
	}
	return out
}

// beyondHistory returns the finished children to delete so that at most successLimit succeeded and failLimit
// failed children remain: the oldest go first. cs must be sorted oldest first. Children already being deleted
// neither count nor are returned.
func beyondHistory(cs []child, successLimit, failLimit int32) []child {
	var ok, bad []child
	for _, c := range cs {
		switch {
		case c.Deleting:
		case c.Outcome == succeeded:
			ok = append(ok, c)
		case c.Outcome == failed:
			bad = append(bad, c)
		}
	}
	var out []child
	if n := len(ok) - int(successLimit); n > 0 {
		out = append(out, ok[:n]...)
	}
	if n := len(bad) - int(failLimit); n > 0 {
		out = append(out, bad[:n]...)
	}
	return out
}

// childName is <acj>-<unix seconds of the scheduled time>: one name per slot, so a retried or repeated create
// for the same slot can never make a second child.
func childName(acj *appsv1alpha1.AdvancedCronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", acj.Name, scheduled.Unix())
}

// childMeta is the metadata every child gets: the template's labels and annotations, the scheduled-at
// annotation, and a controllerRef to the AdvancedCronJob.
func childMeta(acj *appsv1alpha1.AdvancedCronJob, tmpl metav1.ObjectMeta, scheduled time.Time) metav1.ObjectMeta {
	annotations := make(map[string]string, len(tmpl.Annotations)+1)
	for k, v := range tmpl.Annotations {
		annotations[k] = v
	}
	annotations[pub.AdvancedCronJobScheduledAtAnnotation] = scheduled.UTC().Format(time.RFC3339)
	var labels map[string]string
	if len(tmpl.Labels) > 0 {
		labels = make(map[string]string, len(tmpl.Labels))
		for k, v := range tmpl.Labels {
			labels[k] = v
		}
	}
	return metav1.ObjectMeta{
		Name:            childName(acj, scheduled),
		Namespace:       acj.Namespace,
		Labels:          labels,
		Annotations:     annotations,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(acj, appsv1alpha1.SchemeGroupVersion.WithKind("AdvancedCronJob"))},
	}
}

// newJob builds the Job for one scheduled run. The template is deep-copied: it belongs to the cached object.
func newJob(acj *appsv1alpha1.AdvancedCronJob, scheduled time.Time) *batchv1.Job {
	tmpl := acj.Spec.Template.JobTemplate
	return &batchv1.Job{
		ObjectMeta: childMeta(acj, tmpl.ObjectMeta, scheduled),
		Spec:       *tmpl.Spec.DeepCopy(),
	}
}

// newBroadcastJob builds the BroadcastJob for one scheduled run.
func newBroadcastJob(acj *appsv1alpha1.AdvancedCronJob, scheduled time.Time) *appsv1alpha1.BroadcastJob {
	tmpl := acj.Spec.Template.BroadcastJobTemplate
	return &appsv1alpha1.BroadcastJob{
		ObjectMeta: childMeta(acj, tmpl.ObjectMeta, scheduled),
		Spec:       *tmpl.Spec.DeepCopy(),
	}
}

// templateKind is the kind of children the template makes; empty if it holds none (the API server rejects that).
func templateKind(acj *appsv1alpha1.AdvancedCronJob) appsv1alpha1.TemplateKind {
	switch {
	case acj.Spec.Template.JobTemplate != nil:
		return appsv1alpha1.JobTemplate
	case acj.Spec.Template.BroadcastJobTemplate != nil:
		return appsv1alpha1.BroadcastJobTemplate
	}
	return ""
}
