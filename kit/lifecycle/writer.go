package lifecycle

import (
	"context"
	"fmt"

	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Writer applies a Patch to a pod.
type Writer interface {
	// Patch writes p to pod and returns the pod as the API server returned
	// it after the last write, or nil when p was zero or nothing needed
	// writing. On error it returns the pod as of the last successful write,
	// if any. pod (typically from an informer cache) is not modified.
	Patch(ctx context.Context, pod *corev1.Pod, p Patch) (*corev1.Pod, error)
}

// ClientWriter is the client-go Writer. It writes the readiness keys first,
// through pods/status (podreadiness.Writer: optimistic concurrency, retried
// on conflict), so that Ready is already False when the state label
// announces PreparingDelete/PreparingUpdate to the hook's controller; then
// the labels, annotation and finalizers as one strategic merge patch. If the
// status write fails nothing else is written and the caller retries later.
type ClientWriter struct {
	pods      podcontrol.PodControl
	readiness *podreadiness.Writer
}

var _ Writer = (*ClientWriter)(nil)

// NewWriter returns a ClientWriter using client; clk stamps the
// KruisePodReady lastTransitionTime (nil: the real clock).
func NewWriter(client kubernetes.Interface, clk clock.PassiveClock) *ClientWriter {
	return &ClientWriter{pods: podclient.New(client), readiness: podreadiness.NewWriter(client, clk)}
}

// Patch implements Writer.
func (w *ClientWriter) Patch(ctx context.Context, pod *corev1.Pod, p Patch) (*corev1.Pod, error) {
	var written *corev1.Pod
	if len(p.AddNotReady) > 0 || len(p.RemoveNotReady) > 0 {
		got, err := w.readiness.Update(ctx, pod, p.AddNotReady, p.RemoveNotReady)
		if err != nil {
			return nil, fmt.Errorf("updating %s of pod %s/%s: %w", podreadiness.ConditionType, pod.Namespace, pod.Name, err)
		}
		written = got
	}
	if body := p.MetadataPatch(); body != nil {
		got, err := w.pods.PatchBytes(ctx, pod, types.StrategicMergePatchType, body)
		if err != nil {
			return written, fmt.Errorf("patching lifecycle of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		written = got
	}
	return written, nil
}
