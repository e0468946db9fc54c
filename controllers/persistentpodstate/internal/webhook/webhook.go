// Package webhook is PersistentPodState's pod admission, served by
// kit/webhook on every replica: a StatefulSet pod created under a name the
// PersistentPodState of its StatefulSet recorded gets the recorded topology
// (required keys as nodeSelector, weighted preferred node affinity) and the
// kruise.io/injected-persistent-pod-state annotation, as OpenKruise's pod
// webhook does. The leader keeps the webhook's match condition (PodScope) to
// exactly those pods: the API server calls it for no other pod.
package webhook

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/topology"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Paths and names, as in deploy/components/persistentpodstate.
const (
	PodPath = "/mutate-pod"
	// HandlerName is the handler's name in the webhook metrics.
	HandlerName = "persistentpodstate-mutate-pod"
	// ConfigName names the MutatingWebhookConfiguration.
	ConfigName = "flotilla-persistentpodstate"
	// PodWebhookName is the pod entry; the API server names it in its
	// errors when the webhook is down.
	PodWebhookName = "persistent-topology.pods.persistentpodstate.flotilla.dev"
)

// Refs are the binary's webhook configurations.
func Refs() []kitwebhook.ConfigRef {
	return []kitwebhook.ConfigRef{{Kind: kitwebhook.Mutating, Name: ConfigName}}
}

// Handlers serve the pod webhook from the PersistentPodState cache (indexed
// by topology.TargetIndex).
type Handlers struct {
	States cache.Indexer
}

// Register serves the pod handler on s.
func (h *Handlers) Register(s *kitwebhook.Server) {
	s.Register(PodPath, HandlerName, kitwebhook.HandlerFunc(h.MutatePod))
}

// MutatePod writes the recorded topology into a StatefulSet pod being
// created under a recorded name; any other pod is allowed unchanged.
func (h *Handlers) MutatePod(ctx context.Context, req kitwebhook.Request) kitwebhook.Response {
	pod, resp, ok := kitwebhook.PodCreation(req)
	if !ok {
		return resp
	}
	t, ok := topology.OfPod(pod)
	if !ok {
		return kitwebhook.Allowed()
	}
	pps, err := topology.StateFor(h.States, t)
	if err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, fmt.Errorf("persistentpodstate: %w", err))
	}
	if pps == nil {
		return kitwebhook.Allowed()
	}
	state, ok := pps.Status.PodStates[pod.Name]
	if !ok || len(state.NodeTopologyLabels) == 0 {
		// First creation of this pod: nothing recorded to keep.
		return kitwebhook.Allowed()
	}
	c := topology.ConstraintsFor(&pps.Spec, state)
	if c.Empty() {
		return kitwebhook.Allowed()
	}
	topology.Apply(pod, pps.Name, c)
	klog.FromContext(ctx).V(2).Info("Injecting persistent topology", "pod", klog.KObj(pod), "persistentPodState", pps.Name,
		"nodeSelector", c.NodeSelector, "preferred", len(c.Preferred))
	return kitwebhook.Patched(req.Object.Raw, pod)
}
