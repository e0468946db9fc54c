package broadcastjob

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// validate returns why the job cannot run, or "". The CRD enforces the enums and ranges, but spec.template is
// schemaless, so what OpenKruise's admission webhook checks about the pod template is checked here: a job pod
// must be able to finish (restartPolicy Never or OnFailure; empty means Never), must have a container, and its
// node affinity must parse. Such a job fails at once (condition Failed, reason InvalidSpec, Warning event) and
// never creates a pod.
func validate(job *appsv1alpha1.BroadcastJob) string {
	spec := &job.Spec.Template.Spec
	var problems []string
	switch spec.RestartPolicy {
	case "", corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure:
	default:
		problems = append(problems, fmt.Sprintf("spec.template.spec.restartPolicy: Unsupported value: %q: supported values: \"Never\", \"OnFailure\"", spec.RestartPolicy))
	}
	if len(spec.Containers) == 0 {
		problems = append(problems, "spec.template.spec.containers: Required value: a pod needs at least one container")
	}
	for i, c := range spec.Containers {
		if c.Name == "" || c.Image == "" {
			problems = append(problems, fmt.Sprintf("spec.template.spec.containers[%d]: Required value: name and image", i))
		}
	}
	if _, err := resolveParallelism(job.Spec.Parallelism, 100); err != nil {
		problems = append(problems, fmt.Sprintf("spec.parallelism: Invalid value: %v", err))
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if _, err := nodeaffinity.NewNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			problems = append(problems, fmt.Sprintf("spec.template.spec.affinity.nodeAffinity: Invalid value: %v", err))
		}
	}
	return strings.Join(problems, "; ")
}
