// Package webhook is container launch priority's mutating pod webhook: at pod creation it checks the
// launch-priority input (annotation apps.kruise.io/container-launch-priority, env KRUISE_CONTAINER_PRIORITY) and
// adds the KRUISE_CONTAINER_BARRIER env to each container (internal/barrier). The API server calls it only for
// pods carrying that annotation or env (the static matchConditions of
// deploy/components/launchpriority/webhook.yaml): no other pod creation ever waits on it.
package webhook

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/barrier"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Path and HandlerName of the pod webhook (HandlerName labels its metrics).
const (
	Path        = "/mutate-pod"
	HandlerName = "launchpriority-mutate-pod"
	// ConfigName is the MutatingWebhookConfiguration whose caBundle the binary keeps. The API server calls
	// mutating configurations in name order: "z" puts launch priority after SidecarSet injection, as in
	// OpenKruise's one pod webhook (deploy/components/launchpriority/webhook.yaml).
	ConfigName = "flotilla-z-launchpriority"
)

// Register serves the pod webhook on s.
func Register(s *kitwebhook.Server) {
	s.Register(Path, HandlerName, kitwebhook.HandlerFunc(MutatePod))
}

// MutatePod rejects invalid launch-priority input naming the field, and injects the barrier env.
func MutatePod(ctx context.Context, req kitwebhook.Request) kitwebhook.Response {
	if req.Operation != "CREATE" || req.SubResource != "" {
		return kitwebhook.Allowed()
	}
	pod := &corev1.Pod{}
	if err := req.DecodeObject(pod); err != nil {
		return kitwebhook.Errored(http.StatusBadRequest, err)
	}
	if errs := barrier.Validate(pod); len(errs) > 0 {
		return kitwebhook.Invalid(fmt.Sprintf("pod %s: %s", podName(pod), errs.ToAggregate().Error()))
	}
	if !barrier.Inject(pod, func(base string) string { return base + utilrand.String(5) }) {
		return kitwebhook.Allowed()
	}
	klog.FromContext(ctx).V(3).Info("Injected container launch barrier", "namespace", req.Namespace, "pod", pod.Name)
	return kitwebhook.Patched(req.Object.Raw, pod)
}

func podName(p *corev1.Pod) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName + "*"
}
