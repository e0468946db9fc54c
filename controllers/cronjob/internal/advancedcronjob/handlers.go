package advancedcronjob

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// addHandlers maps informer events to AdvancedCronJob keys:
//   - an AdvancedCronJob's own add/update/delete enqueues it at once;
//   - a Job or BroadcastJob it controls enqueues it on every change (a child finishing frees a Forbid slot and
//     shrinks status.active, so it must not wait for the next scheduled time) and on deletion. Each kind is
//     watched as itself and mapped to its AdvancedCronJob owner.
func (c *Controller) addHandlers(acjs, jobs, bcjs cache.SharedIndexInformer) error {
	// Matches controllerRefs to an AdvancedCronJob of any version of apps.kruise.io.
	owner := controller.OwnerKind{Group: appsv1alpha1.GroupName, Kind: "AdvancedCronJob"}
	if _, err := acjs.AddEventHandler(controller.NewKeyHandler(c.Queue)); err != nil {
		return fmt.Errorf("watch AdvancedCronJobs: %w", err)
	}
	if _, err := jobs.AddEventHandler(controller.NewOwnerHandler(owner, c.Queue, nil)); err != nil {
		return fmt.Errorf("watch Jobs: %w", err)
	}
	if _, err := bcjs.AddEventHandler(controller.NewOwnerHandler(owner, c.Queue, nil)); err != nil {
		return fmt.Errorf("watch BroadcastJobs: %w", err)
	}
	return nil
}

// ensureOwnerUIDIndex adds kit's owner-UID index unless another reconciler sharing the informer already did.
func ensureOwnerUIDIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[controller.OwnerUIDIndex]; ok {
		return nil
	}
	return controller.AddOwnerUIDIndex(inf)
}
