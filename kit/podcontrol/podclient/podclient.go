package podclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/kit/podcontrol"
)

// New returns the PodControl that writes through client.
func New(client kubernetes.Interface) podcontrol.PodControl {
	return podcontrol.NewFor(writer{client})
}

// Or returns pc, or when it is nil the PodControl over client: what a
// controller builds from wiring.Deps (PodControl set by sync tests only).
func Or(pc podcontrol.PodControl, client kubernetes.Interface) podcontrol.PodControl {
	if pc != nil {
		return pc
	}
	return New(client)
}

// writer is podcontrol.Writer over the clientset: the API server.
type writer struct{ client kubernetes.Interface }

func (w writer) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	return w.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, opts)
}

func (w writer) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	return w.client.CoreV1().Pods(namespace).Delete(ctx, name, opts)
}

func (w writer) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error) {
	return w.client.CoreV1().Pods(namespace).Patch(ctx, name, pt, data, opts, subresources...)
}

// Clocked is what kit's pod writers that stamp times and retry on Conflict
// (kit/inplace/inplaceclient.Control, kit/podreadiness.Writer) share: the
// PodControl they write through, the clock that stamps what they write and
// the read of a pod again from the API server after a Conflict.
type Clocked struct {
	Pods  podcontrol.PodControl
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
