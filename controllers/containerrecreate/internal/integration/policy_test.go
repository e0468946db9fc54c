package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// containerrecreate-controller's pods/status writes may change KruisePodReady and Ready only (the shipped policy
// flotilla-containerrecreate-controller-pod-status): another condition, the rest of the status, a label or a
// finalizer is refused.
func TestControllerPodStatusWritesArePinned(t *testing.T) {
	h := newHarness(t)
	h.Env.ApplyPolicies(t, "deploy/components/containerrecreate/policy.yaml")
	h.runningPod("p")
	kube := kubernetes.NewForConfigOrDie(h.Env.ActingAs("system:serviceaccount:flotilla-system:containerrecreate-controller", nil))
	// Each attempt also flips KruisePodReady (allowed), so that no attempt is a no-op the API server admits
	// without asking the policy.
	flip := corev1.ConditionFalse
	update := func(mutate func(*corev1.Pod)) error {
		p, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), "p", metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(p)
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == pub.KruisePodReadyConditionType {
				p.Status.Conditions[i].Status, p.Status.Conditions[i].LastTransitionTime = flip, metav1.NewTime(time.Now())
			}
		}
		if flip == corev1.ConditionFalse {
			flip = corev1.ConditionTrue
		} else {
			flip = corev1.ConditionFalse
		}
		_, err = kube.CoreV1().Pods(h.NS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		return err
	}
	testenv.Refused(t, "another condition", "only the KruisePodReady and Ready conditions", func() error {
		return update(func(p *corev1.Pod) {
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == corev1.ContainersReady {
					p.Status.Conditions[i].Status = corev1.ConditionFalse
				}
			}
		})
	})
	testenv.Refused(t, "the pod IP", "only the KruisePodReady and Ready conditions", func() error {
		return update(func(p *corev1.Pod) { p.Status.PodIP = "10.255.255.254"; p.Status.PodIPs = nil })
	})
	testenv.Refused(t, "a label", "labels, annotations or finalizers", func() error {
		return update(func(p *corev1.Pod) { p.Labels = map[string]string{"app": "hijacked"} })
	})
	testenv.Refused(t, "a finalizer", "labels, annotations or finalizers", func() error {
		return update(func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, "example.com/hold") })
	})
	// What kit/podreadiness writes: KruisePodReady, and Ready recomputed.
	require.NoError(t, update(func(p *corev1.Pod) {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
	}))
}
