package webhook

import (
	"fmt"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/apis/apps/conversion"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Setup registers the webhook with the shell: the admission server and the
// small caches it reads run on every replica; so does the scope syncer's
// widening half (a new SidecarSet is in the pod webhook's match conditions
// as soon as any replica has seen it, leader or not), while only the leader
// narrows them when SidecarSets go. Both react to a change of the
// configuration itself (a re-applied manifest resets the scope to "false").
//
// With podWebhook false (gate PodWebhook off) only the SidecarSet validation
// is served: the pod path is not registered and the pod entry's scope stays
// "false", so the API server never calls it.
func Setup(env *kitapp.Env, cl *wiring.Clients, opts kitwebhook.Options, systemNamespace string, podWebhook bool) error {
	if opts.Disabled {
		return nil
	}
	strip := controller.StripManagedFields
	sets := flotillainformers.NewSharedInformerFactoryWithOptions(cl.Client, 0, flotillainformers.WithTransform(strip))
	setInf := sets.Apps().V1alpha1().SidecarSets()
	cluster := informers.NewSharedInformerFactoryWithOptions(cl.Kube, 0, informers.WithTransform(strip))
	nsInf := cluster.Core().V1().Namespaces()
	revs := informers.NewSharedInformerFactoryWithOptions(cl.Kube, 0, informers.WithTransform(strip),
		informers.WithNamespace(systemNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sidecarcontrol.RevisionNameLabel }))
	revInf := revs.Apps().V1().ControllerRevisions()
	if err := revInf.Informer().AddIndexers(cache.Indexers{sidecarcontrol.RevisionIndex: sidecarcontrol.IndexRevisionBySidecarSet}); err != nil {
		return fmt.Errorf("add revision index: %w", err)
	}
	config := informers.NewSharedInformerFactoryWithOptions(cl.Kube, 0, informers.WithTransform(strip),
		informers.WithNamespace(systemNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + sidecarcontrol.ConfigMapName }))
	cmInf := config.Core().V1().ConfigMaps()
	for _, f := range []kitapp.InformerFactory{sets, cluster, revs, config} {
		env.AddReplicaInformerFactory(f)
	}

	c, err := kitwebhook.New(opts, env.KubeClient, env.Metrics, env.Clock, Refs()...)
	if err != nil {
		return err
	}
	h := &Handlers{
		Sets:            setInf.Lister(),
		Namespaces:      nsInf.Lister(),
		Kube:            cl.Kube,
		Revisions:       sidecarcontrol.RevisionIndexer{Indexer: revInf.Informer().GetIndexer()},
		ConfigMaps:      cmInf.Lister(),
		SystemNamespace: systemNamespace,
		Gates:           env.Gates,
		Clock:           env.Clock,
	}
	if podWebhook {
		h.Register(c.Server)
	} else {
		h.RegisterValidation(c.Server)
	}
	// The SidecarSet CRD's versions differ (apis/apps/conversion): every
	// replica also serves its conversion and keeps the CRD calling this
	// Service with this CA.
	if env.RESTConfig == nil {
		return fmt.Errorf("the SidecarSet conversion webhook needs a REST config (or --webhook-disable)")
	}
	ext, err := apiextensionsclient.NewForConfig(env.RESTConfig)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	c.ServeConversion(ext.ApiextensionsV1().CustomResourceDefinitions(), env.Name, "sidecarset-convert", conversion.Convert, CRD)
	env.AddReplicaComponent(c.ReplicaComponent())

	ref := kitwebhook.ConfigRef{Kind: kitwebhook.Mutating, Name: ConfigName}
	scope := NewPodScopeSyncer(cl.Kube, cl.Client, ref, setInf.Lister(), setInf.Informer().HasSynced, podWebhook, env.Clock)
	return kitwebhook.RunScopeSyncers(env, cl.Kube, setInf.Informer(), TriggerOnChange, []kitwebhook.ConfigRef{ref}, scope)
}

// CRD is the CustomResourceDefinition whose versions this binary converts.
const CRD = "sidecarsets.apps.kruise.io"

// TriggerOnChange calls trigger on every SidecarSet add, delete and spec or
// deletion change (status writes do not move the scope).
func TriggerOnChange(trigger func()) cache.ResourceEventHandler {
	return kitwebhook.TriggerOnSpecChange(trigger)
}
