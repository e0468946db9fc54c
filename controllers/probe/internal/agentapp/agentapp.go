// Package agentapp wires the probe-agent binary: the kit/app shell without
// leader election (one agent per node, each owning its node's probes), with
// informers scoped to the node by field selectors.
package agentapp

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	criapi "k8s.io/cri-api/pkg/apis"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/agent"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/containermeta"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/imagepuller"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/recreate"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/node/cri"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent and logger name.
const Name = "probe-agent"

// options are probe-agent's own flags.
type options struct {
	nodeName   string
	batchDelay time.Duration
	criSocket  string
	maxExecs   int
	maxPulls   int
}

// Binary describes probe-agent to the kit/app shell.
func Binary() kitapp.Binary {
	o := &options{nodeName: os.Getenv("NODE_NAME"), batchDelay: 200 * time.Millisecond, maxExecs: agent.DefaultMaxConcurrentExecs,
		maxPulls: imagepuller.DefaultMaxConcurrentPulls}
	return kitapp.Binary{
		Name:  Name,
		Gates: Gates(),
		AddFlags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.nodeName, "node-name", o.nodeName, "The node this agent probes for (default: $NODE_NAME, from the downward API).")
			fs.DurationVar(&o.batchDelay, "status-batch-delay", o.batchDelay, "Results changed within this delay go into one NodePodProbe status write.")
			fs.StringVar(&o.criSocket, "cri-socket", o.criSocket, "CRI runtime endpoint for exec probes and container recreation (e.g. unix:///run/containerd/containerd.sock); empty: exec probes are reported Unknown and ContainerRecreateRequests are not served.")
			fs.IntVar(&o.maxExecs, "max-concurrent-execs", o.maxExecs, "At most this many exec probes run at once on the node (each is a process in a container); an exec probe that finds no free slot within its timeoutSeconds is skipped, its state unchanged. 0: no limit.")
			fs.IntVar(&o.maxPulls, "max-concurrent-pulls", o.maxPulls, "With ImagePullJobGate, at most this many NodeImage image pulls run at once on the node; the others wait (phase Waiting).")
			// Every node runs its own agent: no Lease to win. The flag stays so
			// a test can still turn it on, but the default is off.
			if f := fs.Lookup("leader-elect"); f != nil {
				_ = f.Value.Set("false")
				f.DefValue = "false"
			}
		},
		Setup: func(ctx context.Context, env *kitapp.Env) error { return setup(ctx, env, o) },
	}
}

func setup(ctx context.Context, env *kitapp.Env, o *options) error {
	if o.nodeName == "" {
		return fmt.Errorf("%s needs --node-name or $NODE_NAME", Name)
	}
	if env.RESTConfig == nil {
		return fmt.Errorf("%s needs a REST config for the Flotilla clientset", Name)
	}
	client, err := versioned.NewForConfig(env.RESTConfig)
	if err != nil {
		return fmt.Errorf("build Flotilla clientset: %w", err)
	}
	// Only this node's pods (all namespaces: --namespace does not apply to
	// an agent) and this node's NodePodProbe are cached.
	kubeInf := informers.NewSharedInformerFactoryWithOptions(env.KubeClient, env.Options.SyncPeriod,
		informers.WithTransform(controller.StripManagedFields),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.FieldSelector = agent.NodePodFieldSelector(o.nodeName) }))
	flotInf := flotillainformers.NewSharedInformerFactoryWithOptions(client, env.Options.SyncPeriod,
		flotillainformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.FieldSelector = agent.NodeNameFieldSelector(o.nodeName) }))
	env.AddInformerFactory(kubeInf)
	env.AddInformerFactory(flotInf)
	var exec agent.Execer
	var runtime criapi.RuntimeService
	if o.criSocket != "" {
		// The runtime must answer Version at start-up; if it does not, the
		// agent exits and the DaemonSet restarts it.
		rs, err := cri.Connect(ctx, o.criSocket)
		if err != nil {
			return err
		}
		exec, runtime = rs, rs
	}
	scheme, err := wiring.NewScheme()
	if err != nil {
		return err
	}
	recorder := env.EventRecorder(ctx, scheme)
	if err := addRecreate(env, o, client, kubeInf, runtime, recorder); err != nil {
		return err
	}
	if err := addContainerMeta(env, kubeInf, runtime, recorder); err != nil {
		return err
	}
	if err := addImagePuller(ctx, env, o, client, flotInf, recorder); err != nil {
		return err
	}
	a, err := agent.New(agent.Deps{
		NodeName: o.nodeName, Client: client, KubeInformers: kubeInf, Informers: flotInf,
		Clock: env.Clock, BatchDelay: o.batchDelay, Exec: exec, MaxConcurrentExecs: o.maxExecs, Recorder: recorder,
	})
	if err != nil {
		return err
	}
	env.AddController(a)
	return nil
}

// Gates are the feature gates probe-agent accepts in --feature-gates. KruiseDaemon (OpenKruise's gate for
// everything kruise-daemon does) turns on the ContainerRecreateRequest worker; the probes run regardless, as
// before it existed. InPlaceUpdateEnvFromMetadata (on by default, forced off without KruiseDaemon) turns on the
// env-from-metadata worker. ImagePullJobGate (off by default, forced off without KruiseDaemon, as in OpenKruise)
// turns on the NodeImage puller.
func Gates() []featuregate.Feature {
	return []featuregate.Feature{features.KruiseDaemon, features.InPlaceUpdateEnvFromMetadata, features.ImagePullJobGate}
}

// addContainerMeta adds the env-from-metadata worker (runtime-containers-meta, container restarts) when
// InPlaceUpdateEnvFromMetadata is on (it is forced off without KruiseDaemon) and a CRI runtime is configured.
// It shares the agent's informer of its node's pods.
func addContainerMeta(env *kitapp.Env, kubeInf informers.SharedInformerFactory, rs criapi.RuntimeService, recorder record.EventRecorder) error {
	if !env.Gates.Enabled(features.InPlaceUpdateEnvFromMetadata) {
		return nil
	}
	if rs == nil {
		env.Logger.Info("InPlaceUpdateEnvFromMetadata is on but --cri-socket is empty: containers are not restarted for env from metadata on this node")
		return nil
	}
	w, err := containermeta.New(containermeta.Deps{
		KubeInformers: kubeInf, Pods: podcontrol.New(env.KubeClient), Runtime: rs, Recorder: recorder, Queue: env.Options.Queue,
	})
	if err != nil {
		return err
	}
	env.AddController(w)
	return nil
}

// addRecreate adds the ContainerRecreateRequest worker when KruiseDaemon is on and a CRI runtime is configured.
func addRecreate(env *kitapp.Env, o *options, client versioned.Interface, kubeInf informers.SharedInformerFactory,
	rs criapi.RuntimeService, recorder record.EventRecorder) error {
	if !env.Gates.Enabled(features.KruiseDaemon) {
		return nil
	}
	if rs == nil {
		env.Logger.Info("KruiseDaemon is on but --cri-socket is empty: ContainerRecreateRequests are not served on this node")
		return nil
	}
	w, err := recreate.New(recreate.Deps{
		NodeName: o.nodeName, Client: client, KubeInformers: kubeInf, Runtime: rs, Clock: env.Clock,
		Recorder: recorder, Queue: env.Options.Queue,
	})
	if err != nil {
		return err
	}
	env.AddInformerFactory(w.Factory())
	env.AddController(w)
	return nil
}

// addImagePuller adds the NodeImage puller when ImagePullJobGate is on and a CRI runtime is configured: it
// watches this node's NodeImage through the agent's factory (field selector metadata.name=<node>).
func addImagePuller(ctx context.Context, env *kitapp.Env, o *options, client versioned.Interface,
	flotInf flotillainformers.SharedInformerFactory, recorder record.EventRecorder) error {
	if !env.Gates.Enabled(features.ImagePullJobGate) {
		return nil
	}
	if o.criSocket == "" {
		env.Logger.Info("ImagePullJobGate is on but --cri-socket is empty: this node's NodeImage is not pulled")
		return nil
	}
	images, err := cri.ConnectImages(ctx, o.criSocket)
	if err != nil {
		return err
	}
	w, err := imagepuller.New(imagepuller.Deps{
		NodeName: o.nodeName, Client: client, Kube: env.KubeClient, Informers: flotInf, Images: images,
		Clock: env.Clock, Recorder: recorder, Queue: env.Options.Queue, BatchDelay: o.batchDelay,
		MaxConcurrentPulls: o.maxPulls,
	})
	if err != nil {
		return err
	}
	env.AddController(w)
	return nil
}
