package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/kit/podcontrol"
)

// Pod writes moved to kit/podcontrol (issue 27); these forward to it while
// the last callers move over.

// Deprecated: use podcontrol.PodPatch.
func PodPatch(pod, next *corev1.Pod) ([]byte, error) { return podcontrol.PodPatch(pod, next) }

// Deprecated: use podcontrol.PodControl's Patch or PatchStatus.
func PatchPod(ctx context.Context, client kubernetes.Interface, pod, next *corev1.Pod, subresources ...string) (*corev1.Pod, error) {
	if len(subresources) > 0 && subresources[0] == "status" {
		return podcontrol.New(client).PatchStatus(ctx, pod, next)
	}
	return podcontrol.New(client).Patch(ctx, pod, next)
}

// Deprecated: use podcontrol.PodControl's Adopt.
func AdoptPod(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, ref metav1.OwnerReference) error {
	_, err := podcontrol.New(client).Adopt(ctx, pod, ref)
	return err
}

// Deprecated: use podcontrol.PodControl's Release.
func ReleasePod(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, owner types.UID) error {
	_, err := podcontrol.New(client).Release(ctx, pod, owner)
	return err
}
