package podcontrol

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Clocked is what kit's pod writers that stamp times and retry on Conflict
// (kit/inplace.Control, kit/podreadiness.Writer) share: the PodControl they
// write through, the clock that stamps what they write and the read of a
// pod again from the API server after a Conflict.
type Clocked struct {
	Pods  PodControl
	Clock clock.PassiveClock
	// client reads a pod again after a Conflict (Fresh).
	client kubernetes.Interface
}

// NewClocked returns a Clocked writing through client; clk nil means the
// real clock.
func NewClocked(client kubernetes.Interface, clk clock.PassiveClock) Clocked {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return Clocked{Pods: New(client), Clock: clk, client: client}
}

// Fresh reads pod again from the API server (not from a cache): the copy a
// write retried after a Conflict is recomputed on.
func (c Clocked) Fresh(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return c.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
}
