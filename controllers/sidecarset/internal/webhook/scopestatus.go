package webhook

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// NewPodScopeSyncer keeps the pod entry of ref scoped to the SidecarSets
// in sets (none with podWebhook false) and, once the leader has the scope
// in the configuration, sets each SidecarSet's WebhookInScope condition:
// True at the generation the scope was computed from (pods created from
// then on get its sidecars), False for one the webhook does not serve
// (paused, empty selector). client nil: no condition.
func NewPodScopeSyncer(kube kubernetes.Interface, client versioned.Interface, ref kitwebhook.ConfigRef, sets appslisters.SidecarSetLister,
	synced func() bool, podWebhook bool, clk clock.PassiveClock) *kitwebhook.ScopeSyncer {
	if clk == nil {
		clk = clock.RealClock{}
	}
	var report func(context.Context, []*appsv1alpha1.SidecarSet) error
	if client != nil {
		report = func(ctx context.Context, all []*appsv1alpha1.SidecarSet) error {
			return reportInScope(ctx, client, all, podWebhook, clk)
		}
	}
	scope := func(all []*appsv1alpha1.SidecarSet) (kitwebhook.Scope, error) {
		if !podWebhook {
			return PodScope(nil)
		}
		return PodScope(all)
	}
	return kitwebhook.NewScopeSyncer(kube, ref, PodWebhookName, kitwebhook.ListedScope("sidecarset", synced, sets.List, scope, report))
}

// reportInScope writes the WebhookInScope condition of each SidecarSet
// whose condition differs: the cached status with the condition, carrying
// the cached resourceVersion (a conflict retries the sync, on a fresher
// cache; a status the controller has not written yet is written with its
// zero counts, which is what it holds). The controller's status writes
// keep the conditions.
func reportInScope(ctx context.Context, client versioned.Interface, sets []*appsv1alpha1.SidecarSet, podWebhook bool, clk clock.PassiveClock) error {
	return kitwebhook.ReportInScope(ctx, sets,
		func(s *appsv1alpha1.SidecarSet) []metav1.Condition { return s.Status.Conditions },
		func(s *appsv1alpha1.SidecarSet) (bool, string) {
			if podWebhook && Served(s) {
				return true, "pods created from now on that it selects are sent to the sidecar injection webhook"
			}
			return false, "the sidecar injection webhook is not called for it (injection paused, empty selector, or the PodWebhook gate off)"
		},
		func(ctx context.Context, s *appsv1alpha1.SidecarSet, conds []metav1.Condition) error {
			upd := s.DeepCopy()
			upd.Status.Conditions = conds
			_, err := client.AppsV1alpha1().SidecarSets().UpdateStatus(ctx, upd, metav1.UpdateOptions{})
			return err
		}, clk.Now())
}
