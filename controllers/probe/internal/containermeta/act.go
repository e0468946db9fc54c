package containermeta

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// execTimeout bounds the `env` exec used when the runtime does not report a
// container's env (OpenKruise's agent always execs, with 3 s).
const execTimeout = 3 * time.Second

// kubeletHashAnnotation is where the kubelet records its hash of the
// container spec on the runtime's container (hexadecimal).
const kubeletHashAnnotation = "io.kubernetes.container.hash"

// observe asks the runtime about the running containers in todo (see
// newEntries). A container that is not running, or that the runtime cannot
// tell about, gets no entry in the result and is asked again at the next
// sync (retry reports that some were left).
func (w *Worker) observe(ctx context.Context, pod *corev1.Pod, todo []corev1.ContainerStatus) (obs map[string]observed, retry bool) {
	obs = map[string]observed{}
	for _, cs := range todo {
		if cs.State.Running == nil {
			continue
		}
		c := podutil.Container(pod, cs.Name)
		if c == nil {
			continue
		}
		o, err := w.read(ctx, runtimeID(cs.ContainerID), c)
		if err != nil {
			klog.FromContext(ctx).Info("Cannot read the env of a container yet", "pod", klog.KObj(pod), "container", cs.Name, "err", err)
			retry = true
			continue
		}
		obs[cs.Name] = o
	}
	return obs, retry
}

// read returns what the container id was started with: its env from
// metadata hash and the kubelet's spec hash. The env comes from the
// runtime's record of the container (the OCI spec containerd reports in
// verbose status: exact, no process in the container), else from `env`
// run in it as OpenKruise's agent does.
func (w *Worker) read(ctx context.Context, id string, c *corev1.Container) (observed, error) {
	resp, err := w.runtime.ContainerStatus(ctx, id, true)
	if err != nil {
		return observed{}, fmt.Errorf("container status %s: %w", id, err)
	}
	if resp.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return observed{}, fmt.Errorf("container %s is not running", id)
	}
	var o observed
	if h, err := strconv.ParseUint(resp.GetStatus().GetAnnotations()[kubeletHashAnnotation], 16, 64); err == nil {
		o.PlainHash = h
	}
	env, ok := specEnv(resp.GetInfo())
	if !ok {
		out, _, err := w.runtime.ExecSync(ctx, id, []string{"env"}, execTimeout)
		if err != nil {
			return observed{}, fmt.Errorf("exec env in container %s: %w", id, err)
		}
		env = containermeta.ParseEnv(out)
	}
	o.EnvHash = containermeta.CurrentHash(c, env)
	return o, nil
}

// specEnv reads the process env of the OCI runtime spec from a verbose
// container status (containerd: info["info"] = {"runtimeSpec":{"process":{"env":[…]}}}).
func specEnv(info map[string]string) (map[string]string, bool) {
	var v struct {
		RuntimeSpec *struct {
			Process *struct {
				Env []string `json:"env"`
			} `json:"process"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(info["info"]), &v); err != nil || v.RuntimeSpec == nil || v.RuntimeSpec.Process == nil {
		return nil, false
	}
	return containermeta.EnvMap(v.RuntimeSpec.Process.Env), true
}

// write records set in the pod's runtime-containers-meta (a patch of that
// annotation only).
func (w *Worker) write(ctx context.Context, pod *corev1.Pod, set *pub.RuntimeContainerMetaSet) error {
	v, err := containermeta.Encode(set)
	if err != nil {
		return err
	}
	next := pod.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[pub.RuntimeContainerMetaKey] = v
	if _, err := w.pods.Patch(ctx, pod, next); err != nil {
		return fmt.Errorf("write %s of pod %s/%s: %w", pub.RuntimeContainerMetaKey, pod.Namespace, pod.Name, err)
	}
	return nil
}

// stop stops the container of r if it still runs (an agent restarted
// mid-way, or a stop the pod status does not show yet, finds it exited and
// does nothing), with the pod's termination grace period, so the kubelet
// starts it again with the env the pod's metadata resolves to now.
func (w *Worker) stop(ctx context.Context, pod *corev1.Pod, r restart) error {
	resp, err := w.runtime.ContainerStatus(ctx, r.ID, false)
	if err != nil {
		return fmt.Errorf("container status %s: %w", r.ID, err)
	}
	if resp.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	klog.FromContext(ctx).Info("Restarting container: its env from metadata changed", "pod", klog.KObj(pod), "container", r.Name, "containerID", r.ID)
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Killing", "Stopping container %s: its env from labels/annotations changed (in-place update)", r.Name)
	if err := w.runtime.StopContainer(ctx, r.ID, grace); err != nil {
		return fmt.Errorf("stop container %s (%s) of pod %s/%s: %w", r.Name, r.ID, pod.Namespace, pod.Name, err)
	}
	return nil
}
