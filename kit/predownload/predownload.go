// Package predownload decides when a workload rolling out in place should
// ask nodes to pull the new images ahead of the update, and builds the
// ImagePullJobs that ask it (gate PreDownloadImageForInPlaceUpdate for
// CloneSet and Advanced StatefulSet, PreDownloadImageForDaemonSetUpdate for
// Advanced DaemonSet). It matches OpenKruise's wire contract: the same job
// names, labels, pod selector and pull parameters, and the same two labels
// on the update revision recording that the decision was taken.
//
// Decide is pure; NewJob is pure; Control carries a decision out through a
// narrow interface (create/delete ImagePullJobs, label a revision).
//
// imagepulljob-controller carries the jobs out: it writes each job's image
// into the NodeImages of the chosen nodes (parallelism at a time) and the
// node agent (probe-agent with ImagePullJobGate) pulls it through CRI; the
// job's status counts what the nodes report (controllers/imagepulljob).
package predownload

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// OpenKruise's fixed pre-download parameters.
const (
	// MinReplicas: a workload of at most this many replicas rolls out too
	// quickly for a pre-download to pay off.
	MinReplicas = 3
	// DefaultTimeoutSeconds is the pull timeout without the
	// apps.kruise.io/image-predownload-timeout-seconds annotation.
	DefaultTimeoutSeconds = 300
	// DefaultParallelism is the number of nodes pulling at once without the
	// apps.kruise.io/image-predownload-parallelism annotation.
	DefaultParallelism = 1
	// BackoffLimit is the number of retries per node.
	BackoffLimit = 1
	// TTLSecondsAfterFinished: finished jobs go away on their own.
	TTLSecondsAfterFinished = 600
)

// Action is what a workload's sync should do about pre-download.
type Action int

const (
	// Wait: nothing now. The decision for this update revision was already
	// taken, or too few updated pods are ready yet.
	Wait Action = iota
	// Ignore: this rollout is not worth a pre-download; label the update
	// revision apps.kruise.io/image-predownload-ignored so it is not
	// reconsidered.
	Ignore
	// Create: create one ImagePullJob per Decision.Images entry, then label
	// the update revision apps.kruise.io/pre-predownload-created.
	Create
	// DeleteJobs: the rollout has converged; the workload's jobs can go.
	DeleteJobs
)

func (a Action) String() string {
	switch a {
	case Ignore:
		return "Ignore"
	case Create:
		return "Create"
	case DeleteJobs:
		return "DeleteJobs"
	}
	return "Wait"
}

// Input is what the decision looks at. The workload resolves its own update
// strategy into these terms.
type Input struct {
	Current, Update *appsv1.ControllerRevision
	// Replicas is spec.replicas.
	Replicas int32
	// Recreate: the workload's update strategy recreates pods (CloneSet
	// ReCreate; Advanced StatefulSet OnDelete or podUpdatePolicy ReCreate).
	Recreate bool
	// Partition is the number of pods the partition keeps at the current
	// revision, already resolved against Replicas.
	Partition int
	// MaxUnavailable is the update's maxUnavailable with the workload's
	// default applied. It is resolved here, rounding a percentage down.
	MaxUnavailable intstr.IntOrString
	// Annotations are the workload's annotations (the pre-download knobs).
	Annotations map[string]string
	// StatusUpdateRevision and UpdatedReadyReplicas are the workload's
	// status.updateRevision and status.updatedReadyReplicas.
	StatusUpdateRevision string
	UpdatedReadyReplicas int32
}

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	// Images maps a container name to its new image (Create only).
	Images map[string]string
	// Reason says why, for logs.
	Reason string
}

// Decide returns what to do about pre-download in one sync, in OpenKruise's
// order: converged revisions → delete the jobs; too few updated ready pods →
// wait; decision already recorded on the update revision → wait; a recreate
// update, at most MinReplicas replicas, a rollout that takes every pod in one
// batch, or a change that cannot be applied in place → ignore; otherwise
// create a job per changed container image.
func Decide(in Input) Decision {
	if in.Current == nil || in.Update == nil || in.Current.Name == in.Update.Name {
		return Decision{Action: DeleteJobs, Reason: "revisions converged"}
	}
	if need, ready := MinUpdatedReadyPods(in.Annotations, in.Replicas), UpdatedReady(in); ready < need {
		return Decision{Action: Wait, Reason: "waiting for " + strconv.Itoa(need) + " updated ready pods, " + strconv.Itoa(ready) + " now"}
	}
	if _, ok := in.Update.Labels[pub.ImagePreDownloadCreatedKey]; ok {
		return Decision{Action: Wait, Reason: "jobs already created for this revision"}
	}
	if _, ok := in.Update.Labels[pub.ImagePreDownloadIgnoredKey]; ok {
		return Decision{Action: Wait, Reason: "revision already ignored"}
	}
	if in.Recreate {
		return Decision{Action: Ignore, Reason: "pods are recreated"}
	}
	if in.Replicas <= MinReplicas {
		return Decision{Action: Ignore, Reason: "too few replicas"}
	}
	if maxUnavailable := scaled(in.MaxUnavailable, int(in.Replicas), false); in.Partition == 0 && maxUnavailable >= int(in.Replicas) {
		return Decision{Action: Ignore, Reason: "every pod is updated in one batch"}
	}
	spec, ok := inplace.Diff(in.Current.Data.Raw, in.Update.Data.Raw)
	if !ok {
		return Decision{Action: Ignore, Reason: "the change cannot be applied in place"}
	}
	return Decision{Action: Create, Images: spec.ContainerImages, Reason: "in-place rollout"}
}

// UpdatedReady is the "updated and ready" count the minimum is compared
// with: status.updatedReadyReplicas, or 0 when status.updateRevision is not
// the update revision (the count is about an older rollout, e.g. a template
// changed again mid-rollout and the status was not rewritten yet).
func UpdatedReady(in Input) int {
	if in.Update == nil || in.StatusUpdateRevision != in.Update.Name {
		return 0
	}
	return int(in.UpdatedReadyReplicas)
}

// MinUpdatedReadyPods reads apps.kruise.io/image-predownload-min-updated-ready-pods:
// an integer or a percentage of replicas (rounded up). Absent or malformed:
// 0.
func MinUpdatedReadyPods(annotations map[string]string, replicas int32) int {
	v, ok := annotations[pub.ImagePreDownloadMinUpdatedReadyPods]
	if !ok {
		return 0
	}
	return scaled(intstr.Parse(v), int(replicas), true)
}

// scaled resolves an int-or-percent; a malformed value counts as 0, as in
// OpenKruise, which ignores the error.
func scaled(v intstr.IntOrString, total int, roundUp bool) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, roundUp)
	if err != nil {
		return 0
	}
	return n
}

// Owner is a workload object: metadata for the controllerRef, an object for
// events.
type Owner interface {
	metav1.Object
	runtime.Object
}

// Workload is what the jobs of one workload are built from.
type Workload struct {
	Owner    Owner
	Kind     schema.GroupVersionKind
	Selector *metav1.LabelSelector
	Template *corev1.PodTemplateSpec
}

// JobName is "<update revision>-<container>", cut to the longest object
// name.
func JobName(update *appsv1.ControllerRevision, container string) string {
	name := update.Name + "-" + container
	if len(name) > validation.DNS1123SubdomainMaxLength {
		name = name[:validation.DNS1123SubdomainMaxLength]
	}
	return name
}

// NewJob builds the ImagePullJob that pre-pulls image for container on the
// nodes of the workload's pods not yet at the update revision:
//   - labels (on the job and its sandbox config): the template's labels, so
//     the workload's selector matches everything it owns, plus the update
//     revision's controller.kubernetes.io/hash;
//   - sandbox annotations: the template's;
//   - pull secrets: the template's imagePullSecrets;
//   - pod selector: the workload's selector and controller-revision-hash
//     NotIn [update revision name, its hash];
//   - parallelism and timeout from the workload's annotations
//     (apps.kruise.io/image-predownload-parallelism, default 1;
//     apps.kruise.io/image-predownload-timeout-seconds, default 300),
//     backoffLimit 1, completion Always with ttlSecondsAfterFinished 600.
func NewJob(w Workload, update *appsv1.ControllerRevision, container, image string) *appsv1alpha1.ImagePullJob {
	labels := make(map[string]string, len(w.Template.Labels)+1)
	for k, v := range w.Template.Labels {
		labels[k] = v
	}
	hash := update.Labels[revision.HashLabel]
	labels[revision.HashLabel] = hash
	var annotations map[string]string
	if len(w.Template.Annotations) > 0 {
		annotations = make(map[string]string, len(w.Template.Annotations))
		for k, v := range w.Template.Annotations {
			annotations[k] = v
		}
	}
	var secrets []string
	for _, s := range w.Template.Spec.ImagePullSecrets {
		secrets = append(secrets, s.Name)
	}
	sel := &metav1.LabelSelector{}
	if w.Selector != nil {
		sel = w.Selector.DeepCopy()
	}
	sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: pub.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn,
		Values: []string{update.Name, hash},
	})
	ann := w.Owner.GetAnnotations()
	parallelism := intstr.FromInt32(annotationInt32(ann, pub.ImagePreDownloadParallelismKey, DefaultParallelism))
	sandboxLabels := make(map[string]string, len(labels))
	for k, v := range labels {
		sandboxLabels[k] = v
	}
	return &appsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:            JobName(update, container),
			Namespace:       w.Owner.GetNamespace(),
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(w.Owner, w.Kind)},
		},
		Spec: appsv1alpha1.ImagePullJobSpec{
			Image: image,
			ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
				PullSecrets: secrets,
				PodSelector: &appsv1alpha1.ImagePullJobPodSelector{LabelSelector: *sel},
				Parallelism: &parallelism,
				PullPolicy: &appsv1alpha1.PullPolicy{
					TimeoutSeconds: ptr.To(annotationInt32(ann, pub.ImagePreDownloadTimeoutSecondsKey, DefaultTimeoutSeconds)),
					BackoffLimit:   ptr.To[int32](BackoffLimit),
				},
				CompletionPolicy: appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Always, TTLSecondsAfterFinished: ptr.To[int32](TTLSecondsAfterFinished)},
				SandboxConfig:    &appsv1alpha1.SandboxConfig{Labels: sandboxLabels, Annotations: annotations},
			},
		},
	}
}

// annotationInt32 reads an integer annotation; absent or not an int32: def.
// Like OpenKruise it does not check the range: the ImagePullJob's own
// validation rejects what makes no sense.
func annotationInt32(annotations map[string]string, key string, def int32) int32 {
	if v, ok := annotations[key]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			return int32(n)
		}
	}
	return def
}
