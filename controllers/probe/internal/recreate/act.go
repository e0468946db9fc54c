package recreate

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// minStopGrace is the least time a container gets to stop after its preStop (the kubelet's minimum).
const minStopGrace = 2

func (w *Worker) updateStatus(ctx context.Context, out *appsv1alpha1.ContainerRecreateRequest, what string) error {
	// The update carries the resourceVersion read: a status computed from a stale copy fails (Conflict) and the
	// request is looked at again, so a stop is never decided twice from two views of the status.
	if _, err := w.client(out.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("%s of ContainerRecreateRequest %s/%s: %w", what, out.Namespace, out.Name, err)
	}
	return nil
}

func (w *Worker) setPhase(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, phase appsv1alpha1.ContainerRecreateRequestPhase) error {
	out := crr.DeepCopy()
	out.Status.Phase = phase
	return w.updateStatus(ctx, out, "set phase "+string(phase))
}

func (w *Worker) writeStates(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, states []appsv1alpha1.ContainerRecreateRequestContainerRecreateState) error {
	out := crr.DeepCopy()
	out.Status.ContainerRecreateStates = states
	return w.updateStatus(ctx, out, "write container states")
}

// complete ends the request as kruise-daemon does: phase Completed with the completion time (the states say
// which containers succeeded).
func (w *Worker) complete(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, states []appsv1alpha1.ContainerRecreateRequestContainerRecreateState, msg string) error {
	out := crr.DeepCopy()
	now := metav1.NewTime(w.clock.Now())
	out.Status.Phase = appsv1alpha1.ContainerRecreateRequestCompleted
	out.Status.CompletionTime = &now
	out.Status.Message = msg
	out.Status.ContainerRecreateStates = states
	return w.updateStatus(ctx, out, "complete")
}

// stopAll runs the preStop of each named container and stops it; a container that cannot be stopped is Failed.
func (w *Worker) stopAll(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, names []string) error {
	if len(names) == 0 {
		return nil
	}
	pod := w.pod(crr)
	if pod == nil {
		// The pod is not in the agent's cache yet (or is gone: the controller completes the request).
		return fmt.Errorf("pod %s/%s of ContainerRecreateRequest %s not in the node's pod cache", crr.Namespace, crr.Spec.PodName, crr.Name)
	}
	states := append([]appsv1alpha1.ContainerRecreateRequestContainerRecreateState(nil), crr.Status.ContainerRecreateStates...)
	failedAny := false
	for _, name := range names {
		if err := w.stop(ctx, crr, pod, name); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to stop container", "crr", klog.KObj(crr), "container", name)
			for i := range states {
				if states[i].Name == name {
					states[i].Phase, states[i].Message = appsv1alpha1.ContainerRecreateRequestFailed, fmt.Sprintf("kill container error: %v", err)
				}
			}
			failedAny = true
		}
	}
	if failedAny {
		return w.writeStates(ctx, crr, states)
	}
	return nil
}

// stop runs the container's preStop (the pod's own hook: a request cannot bring a command of its own) within the
// grace period, then stops the container the request was accepted for with what is left of it.
func (w *Worker) stop(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, name string) error {
	var id string
	for _, c := range crr.Spec.Containers {
		if c.Name == name && c.StatusContext != nil {
			id = rawID(c.StatusContext.ContainerID)
		}
	}
	grace := int64(30)
	if s := crr.Spec.Strategy; s != nil && s.TerminationGracePeriodSeconds != nil {
		grace = *s.TerminationGracePeriodSeconds
	}
	start := w.clock.Now()
	if hook := preStopOf(pod, name); hook != nil && grace > 0 {
		if err := w.runPreStop(ctx, pod, name, id, hook, time.Duration(grace)*time.Second); err != nil {
			// As the kubelet: a failed preStop is reported and the container is stopped anyway.
			w.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedPreStopHook", "ContainerRecreateRequest %s: preStop of container %s: %v", crr.Name, name, err)
		}
	}
	left := grace - int64(w.clock.Since(start).Seconds())
	if left < minStopGrace {
		left = minStopGrace
	}
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Killing", "Stopping container %s by ContainerRecreateRequest %s", name, crr.Name)
	return w.runtime.StopContainer(ctx, id, left)
}

func preStopOf(pod *corev1.Pod, name string) *corev1.LifecycleHandler {
	for _, c := range pod.Spec.Containers {
		if c.Name == name && c.Lifecycle != nil {
			return c.Lifecycle.PreStop
		}
	}
	return nil
}

func (w *Worker) runPreStop(ctx context.Context, pod *corev1.Pod, name, id string, hook *corev1.LifecycleHandler, timeout time.Duration) error {
	switch {
	case hook.Exec != nil:
		_, stderr, err := w.runtime.ExecSync(ctx, id, hook.Exec.Command, timeout)
		if err != nil {
			return fmt.Errorf("exec %v: %w (stderr %q)", hook.Exec.Command, err, stderr)
		}
		return nil
	case hook.HTTPGet != nil:
		return w.httpPreStop(ctx, pod, name, hook.HTTPGet, timeout)
	case hook.Sleep != nil:
		d := time.Duration(hook.Sleep.Seconds) * time.Second
		if d > timeout {
			d = timeout
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	return nil
}

func (w *Worker) httpPreStop(ctx context.Context, pod *corev1.Pod, name string, h *corev1.HTTPGetAction, timeout time.Duration) error {
	host := h.Host
	if host == "" {
		host = pod.Status.PodIP
	}
	port, err := resolvePort(pod, name, h.Port)
	if err != nil {
		return err
	}
	scheme := "http"
	if h.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: h.Path}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, hd := range h.HTTPHeaders {
		req.Header.Add(hd.Name, hd.Value)
	}
	client := w.http
	if client == nil {
		// No redirects: the agent is on the host network, a hook must not aim it elsewhere.
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func resolvePort(pod *corev1.Pod, name string, p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != name {
			continue
		}
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("port %q not found in container %s", p.StrVal, name)
}
