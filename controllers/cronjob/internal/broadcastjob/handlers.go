package broadcastjob

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

var jobOwner = controller.OwnerKind{Group: controllerKind.Group, Kind: controllerKind.Kind}

// podHandler maps pod events to the owning job (delayed for pods replayed from the initial list) and, for pods
// added, settles the create expectation of their node.
func (c *Controller) podHandler() cache.ResourceEventHandler {
	owner := controller.NewOwnerHandler(jobOwner, c.Queue, nil)
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			c.observe(obj)
			owner.OnAdd(obj, isInInitialList)
		},
		UpdateFunc: owner.OnUpdate,
		DeleteFunc: func(obj any) {
			c.observe(obj)
			owner.OnDelete(obj)
		},
	}
}

func (c *Controller) observe(obj any) {
	pod, ok := controller.PodOf(obj)
	if !ok {
		return
	}
	if key, ok := jobOwner.ControllerKey(pod); ok {
		c.creates.Observed(key, nodeplacement.TargetNode(pod), pod.Name)
	}
}

// nodeHandler re-enqueues every unfinished job when a node appears, goes, or changes in a way eligibility reads
// (labels, taints, unschedulable, allocatable, deletion). Nodes replayed from the initial list are skipped: every job gets its
// own initial sync. Heartbeats and status updates are ignored.
func (c *Controller) nodeHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, isInInitialList bool) {
			if !isInInitialList {
				c.enqueueUnfinishedJobs()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldNode, ok1 := oldObj.(*corev1.Node)
			newNode, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && nodeplacement.EligibilityChanged(oldNode, newNode, eligibilityOptions) {
				c.enqueueUnfinishedJobs()
			}
		},
		DeleteFunc: func(any) { c.enqueueUnfinishedJobs() },
	}
}

func (c *Controller) enqueueUnfinishedJobs() {
	jobs, err := c.jobs.List(labels.Everything())
	if err != nil {
		return // a cache lister does not fail
	}
	for _, job := range jobs {
		if finishedCondition(job.Status) == nil {
			c.Queue.Enqueue(types.NamespacedName{Namespace: job.Namespace, Name: job.Name})
		}
	}
}
