package install

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// persistentPodState: installed from its overlay (controller and pod webhook as pods on the real node, the webhook
// through its Service, failurePolicy Fail), a StatefulSet pod on the shared kwok nodes is recorded with its zone
// and host, and once deleted comes back with its zone required and its host preferred; the uninstall removes the
// webhook configuration and the Deployment and keeps the CRD and the PersistentPodState with its records; the
// other features run on.
func persistentPodState(t *testing.T, in *installer) {
	ctx := context.Background()
	others := in.installed()
	in.install("persistentpodstate")
	ns := in.env.Namespace(t)
	const zone = "topology.kubernetes.io/zone"

	sets := in.env.Kube.AppsV1().StatefulSets(ns)
	_, err := sets.Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "echoserver"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(1)), ServiceName: "echoserver", PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "echoserver"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "echoserver"}},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{"type": "kwok"},
					Tolerations:                   []corev1.Toleration{testenv.TestNodeToleration()},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers:                    []corev1.Container{{Name: "main", Image: "registry.example/echoserver:v1"}},
				},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	states := testenv.ObjectsOf(t, in.client.AppsV1alpha1().PersistentPodStates(ns), 2*time.Minute)
	states.Create(&appsv1alpha1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Name: "echoserver"},
		Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference:            appsv1alpha1.PersistentPodStateTargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "echoserver"},
			RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone}},
			PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{Weight: 100,
				Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"kubernetes.io/hostname"}}}},
		},
	})
	pps := states.WaitFor("echoserver", "echoserver-0 recorded, in the webhook's scope", func(p *appsv1alpha1.PersistentPodState) bool {
		s, ok := p.Status.PodStates["echoserver-0"]
		return ok && s.NodeTopologyLabels[zone] != "" && hasTrueCondition(p, "WebhookInScope")
	})
	recorded := pps.Status.PodStates["echoserver-0"]

	pods := in.env.Kube.CoreV1().Pods(ns)
	old, err := pods.Get(ctx, "echoserver-0", metav1.GetOptions{})
	require.NoError(t, err)
	// The scope follows the records a moment after the status: delete until the recreated pod carries the zone
	// (a pod recreated before that is deleted again, as a user retrying would).
	var pod *corev1.Pod
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		p, err := pods.Get(ctx, "echoserver-0", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.UID == old.UID || p.Spec.NodeSelector[zone] == "" {
			if p.DeletionTimestamp == nil {
				_ = pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			}
			return false, nil
		}
		pod = p
		return true, nil
	})
	assert.Equal(t, recorded.NodeTopologyLabels[zone], pod.Spec.NodeSelector[zone])
	assert.Equal(t, "echoserver", pod.Annotations[appsv1alpha1.AnnotationInjectedPersistentPodState])

	in.uninstall("persistentpodstate")
	_, err = in.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "flotilla-persistentpodstate", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the webhook configuration is gone: %v", err)
	_, err = in.env.Dynamic().Resource(crdGVR).Get(ctx, "persistentpodstates.apps.kruise.io", metav1.GetOptions{})
	require.NoError(t, err, "the CRD is kept")
	assert.NotEmpty(t, states.Get("echoserver").Status.PodStates, "the PersistentPodState and its records are kept")
	in.assertKept(others)
}

func hasTrueCondition(p *appsv1alpha1.PersistentPodState, t string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}
