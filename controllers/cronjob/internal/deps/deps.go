// Package deps holds what the two reconcilers of cronjob-controller (AdvancedCronJob and BroadcastJob) share:
// the clients, one set of informer factories (so an informer both need, e.g. BroadcastJobs, exists once),
// the clock and the event recorder. Tests build a Deps of their own with a fake clock.
package deps

import (
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Deps are the collaborators of a reconciler. Informers must be requested from the factories before they are
// started (the shell starts them once this replica leads; tests start them themselves).
type Deps struct {
	Kube          kubernetes.Interface
	Client        versioned.Interface
	KubeInformers informers.SharedInformerFactory
	Informers     flotillainformers.SharedInformerFactory
	// Namespace restricts informers a reconciler builds itself (filtered ones); empty means all namespaces.
	Namespace    string
	Clock        clock.WithTicker
	Recorder     record.EventRecorder
	QueueOptions controller.QueueOptions
	QueueConfig  controller.QueueConfig
}
