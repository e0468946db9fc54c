// Package barrier holds container launch priority's pure decisions, shared by the pod webhook and the
// controller: which pods it concerns, whether their launch-priority input is valid, the KRUISE_CONTAINER_BARRIER
// env the webhook injects (a configMapKeyRef on "<pod>-barrier", key "p_<priority>", as OpenKruise v1.9), and
// which barrier key the controller opens next.
package barrier

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/inplace"
)

// CompletedKey is the pod annotation OpenKruise's controller writes ("true") once the barrier holds every key
// the pod's containers wait on: from then on nothing is left to open.
const CompletedKey = "apps.kruise.io/container-launch-priority-completed"

// Label marks the barrier ConfigMaps this controller creates, so that its ConfigMap informer lists only them
// (a barrier made by OpenKruise, without it, is found by name and labelled on its next write).
const Label = "launchpriority.flotilla.dev/barrier"

// The priorities KRUISE_CONTAINER_PRIORITY may hold (OpenKruise's proposal: [-2147483647, 2147483647]).
const (
	MinPriority = -math.MaxInt32
	MaxPriority = math.MaxInt32
)

// Name is the barrier ConfigMap of pod podName.
func Name(podName string) string { return podName + "-barrier" }

// Key is the barrier ConfigMap key a container of priority p waits on.
func Key(p int) string { return "p_" + strconv.Itoa(p) }

// Env is the env var the webhook adds to a container of priority p of pod podName: the kubelet cannot start the
// container until the key exists in the ConfigMap.
func Env(podName string, p int) corev1.EnvVar {
	return corev1.EnvVar{Name: pub.ContainerLaunchBarrierEnvName, ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: Name(podName)}, Key: Key(p)},
	}}
}

// Validate checks the launch-priority input of a pod being created: the annotation, when present, must be
// Ordered, and each KRUISE_CONTAINER_PRIORITY an integer in [MinPriority, MaxPriority]. OpenKruise ignores an
// unknown annotation value and answers a non-integer with an internal error; Flotilla rejects both naming the
// field (README, "Differences from OpenKruise").
func Validate(pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	if v, ok := pod.Annotations[pub.ContainerLaunchPriorityKey]; ok && v != pub.ContainerLaunchOrdered {
		errs = append(errs, field.NotSupported(field.NewPath("metadata", "annotations").Key(pub.ContainerLaunchPriorityKey), v, []string{pub.ContainerLaunchOrdered}))
	}
	for i, c := range pod.Spec.Containers {
		for j, e := range c.Env {
			if e.Name != pub.ContainerLaunchPriorityEnvName {
				continue
			}
			path := field.NewPath("spec", "containers").Index(i).Child("env").Index(j).Child("value")
			v, err := strconv.ParseInt(e.Value, 10, 64)
			switch {
			case err != nil:
				errs = append(errs, field.Invalid(path, e.Value, pub.ContainerLaunchPriorityEnvName+" must be an integer"))
			case v < MinPriority || v > MaxPriority:
				errs = append(errs, field.Invalid(path, e.Value, fmt.Sprintf("%s must be in [%d, %d]", pub.ContainerLaunchPriorityEnvName, MinPriority, MaxPriority)))
			}
		}
	}
	return errs
}

// HasBarrier reports whether any container carries the KRUISE_CONTAINER_BARRIER env.
func HasBarrier(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool {
		return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == pub.ContainerLaunchBarrierEnvName })
	})
}

// Wanted returns the priority of each container a pod without a barrier asks for (kit/inplace's reading of the
// Ordered annotation and KRUISE_CONTAINER_PRIORITY, as OpenKruise's webhook reads them), or nil when it asks for
// none: one container, no annotation and no env, or all priorities equal.
func Wanted(pod *corev1.Pod) []int {
	if HasBarrier(pod) {
		return nil
	}
	var out []int
	for _, p := range inplace.ContainerPriorities(pod) {
		if !p.Set {
			return nil
		}
		out = append(out, p.Value)
	}
	return out
}

// Inject adds the barrier env to every container of a pod being created and reports whether it changed the
// pod. A pod created with only generateName gets its name here, as OpenKruise's webhook does: the env names the
// ConfigMap after the pod. A pod already carrying a barrier (a reinvocation) is left alone.
func Inject(pod *corev1.Pod, generateName func(base string) string) bool {
	ps := Wanted(pod)
	if ps == nil {
		return false
	}
	if pod.Name == "" && pod.GenerateName != "" {
		pod.Name = generateName(pod.GenerateName)
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, Env(pod.Name, ps[i]))
	}
	return true
}
