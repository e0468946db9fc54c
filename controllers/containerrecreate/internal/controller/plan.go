package controller

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// responseTimeout is how long a stamped request may stay without a phase (no node agent took it up) before it
// completes as failed, OpenKruise's "daemon has not responded" minute.
const responseTimeout = time.Minute

// Messages of a request completed by the controller, OpenKruise's words (the first ones are those of its
// admission webhook, which refuses such a request; here it completes with the message instead).
const (
	msgPodGone        = "pod has gone"
	msgNoResponse     = "daemon has not responded for a long time"
	msgDeadline       = "recreating has exceeded the activeDeadlineSeconds"
	msgInactivePod    = "not allowed to recreate containers in an inactive Pod"
	msgPendingPod     = "not allowed to recreate containers in a pending Pod"
	msgReadOnlyFields = "preStop, ports, statusContext in container are ready-only fields"
)

// readinessKey is the request's key in the pod's KruisePodReady condition (OpenKruise's user agent and key).
func readinessKey(crr *appsv1alpha1.ContainerRecreateRequest) podreadiness.Key {
	return podreadiness.Key{UserAgent: "ContainerRecreateRequest", Key: crr.Namespace + "/" + crr.Name}
}

// finished reports a request that is deleted or completed: nothing is left to do but release and clean up.
func finished(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	return crr.DeletionTimestamp != nil || crr.Status.CompletionTime != nil
}

// stamped reports whether the controller has accepted the request (labels and status context written).
func stamped(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	_, ok := crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey]
	return ok
}

// stamp validates a new request against its pod and returns the request as the node agent needs it: the pod's
// UID and node and the active flag in labels, each container's preStop, ports (for an httpGet preStop) and
// current ID and restart count in spec, the pod's termination grace period when the request sets none. A
// request that cannot be carried out returns the message it completes with. pod is nil when it does not exist.
func stamp(crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) (*appsv1alpha1.ContainerRecreateRequest, string) {
	switch {
	case pod == nil:
		return nil, fmt.Sprintf("no found Pod named %s", crr.Spec.PodName)
	case pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return nil, msgInactivePod
	case pod.Spec.NodeName == "":
		return nil, msgPendingPod
	}
	out := crr.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] = string(pod.UID)
	out.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey] = pod.Spec.NodeName
	out.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey] = "true"
	if out.Spec.Strategy == nil {
		out.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{}
	}
	if out.Spec.Strategy.FailurePolicy == "" {
		out.Spec.Strategy.FailurePolicy = appsv1alpha1.ContainerRecreateRequestFailurePolicyFail
	}
	if out.Spec.Strategy.TerminationGracePeriodSeconds == nil {
		out.Spec.Strategy.TerminationGracePeriodSeconds = pod.Spec.TerminationGracePeriodSeconds
	}
	for i := range out.Spec.Containers {
		if msg := stampContainer(&out.Spec.Containers[i], pod); msg != "" {
			return nil, msg
		}
	}
	return out, ""
}

func stampContainer(c *appsv1alpha1.ContainerRecreateRequestContainer, pod *corev1.Pod) string {
	if c.PreStop != nil || c.Ports != nil || c.StatusContext != nil {
		return msgReadOnlyFields
	}
	pc := podContainer(pod, c.Name)
	if pc == nil {
		return fmt.Sprintf("container %s not found in Pod", c.Name)
	}
	st := podutil.ContainerStatus(pod, c.Name)
	if st == nil {
		return fmt.Sprintf("not found %s containerStatus in Pod Status", c.Name)
	}
	if st.ContainerID == "" {
		return fmt.Sprintf("no containerID in %s containerStatus, maybe the container has not been initialized", c.Name)
	}
	if pc.Lifecycle != nil && pc.Lifecycle.PreStop != nil {
		h := pc.Lifecycle.PreStop
		c.PreStop = &appsv1alpha1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}
		if h.HTTPGet != nil {
			c.Ports = pc.Ports
		}
	}
	c.StatusContext = &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: st.ContainerID, RestartCount: st.RestartCount}
	return ""
}

// expiry returns the message a running (stamped, unfinished) request completes with now, or "" and how long it
// may still run before the next deadline (0: none).
func expiry(crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, now time.Time) (string, time.Duration) {
	if pod == nil || pod.DeletionTimestamp != nil || string(pod.UID) != crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] {
		return msgPodGone, 0
	}
	var next time.Duration
	soonest := func(d time.Duration) {
		if next == 0 || d < next {
			next = d
		}
	}
	age := now.Sub(crr.CreationTimestamp.Time)
	if crr.Status.Phase == "" {
		if age >= responseTimeout {
			return msgNoResponse, 0
		}
		soonest(responseTimeout - age)
	}
	if d := crr.Spec.ActiveDeadlineSeconds; d != nil {
		left := time.Duration(*d)*time.Second - age
		if left <= 0 {
			return msgDeadline, 0
		}
		soonest(left)
	}
	return "", next
}

// ttlLeft is how long a completed request has before ttlSecondsAfterFinished deletes it (ok false: no TTL).
func ttlLeft(crr *appsv1alpha1.ContainerRecreateRequest, now time.Time) (time.Duration, bool) {
	if crr.Spec.TTLSecondsAfterFinished == nil || crr.Status.CompletionTime == nil {
		return 0, false
	}
	return time.Duration(*crr.Spec.TTLSecondsAfterFinished)*time.Second - now.Sub(crr.Status.CompletionTime.Time), true
}

// syncedStatuses is the annotation value telling the agent the pod's view of each requested container that
// runs a container started after the request was created (OpenKruise's rule): the agent counts a recreation as
// Succeeded only once the new container is ready here.
func syncedStatuses(crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) string {
	out := make([]appsv1alpha1.ContainerRecreateRequestSyncContainerStatus, 0, len(crr.Spec.Containers))
	for _, c := range crr.Spec.Containers {
		st := podutil.ContainerStatus(pod, c.Name)
		if st == nil || st.State.Running == nil || st.State.Running.StartedAt.Before(&crr.CreationTimestamp) {
			continue
		}
		out = append(out, appsv1alpha1.ContainerRecreateRequestSyncContainerStatus{
			Name: st.Name, Ready: st.Ready, RestartCount: st.RestartCount, ContainerID: st.ContainerID,
		})
	}
	b, _ := json.Marshal(out) // a slice of plain structs always marshals
	return string(b)
}

// wantsUnready reports whether the pod must be made NotReady before the agent stops anything: the request asks
// for an unready grace period and has not yet recorded that it acquired it.
func wantsUnready(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	return crr.Spec.Strategy != nil && crr.Spec.Strategy.UnreadyGracePeriodSeconds != nil &&
		crr.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey] == ""
}

func podContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}
