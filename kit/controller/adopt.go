package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// AdoptPod makes ref the pod's controller. The patch carries the pod's uid,
// so it fails instead of touching a namesake created meanwhile; the API
// server rejects it (Invalid) if another controller adopted the pod first.
func AdoptPod(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, ref metav1.OwnerReference) error {
	refJSON, err := json.Marshal(ref)
	if err != nil {
		return err
	}
	return patchOwners(ctx, client, pod, fmt.Sprintf(`{"metadata":{"ownerReferences":[%s],"uid":%q}}`, refJSON, pod.UID))
}

// ReleasePod removes the ownerReference to owner from the pod (guarded by
// the pod's uid likewise).
func ReleasePod(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, owner types.UID) error {
	return patchOwners(ctx, client, pod, fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, owner, pod.UID))
}

func patchOwners(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, patch string) error {
	_, err := client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}
