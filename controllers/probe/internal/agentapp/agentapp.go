// Package agentapp wires the probe-agent binary on kit/app/shell, the part of
// the binary shell without client-go's clientset or leader election (one
// agent per node, each owning its node's work): it reaches the API server
// through internal/nodeclient's REST clients, with informers scoped to the
// node by field and label selectors. Neither client-go's typed clientset nor
// a generated one is linked: their start-up registration of every API group
// was most of the agent's memory (issue 28; TestAgentLeavesOutTheClientset).
package agentapp

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	criapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/controllers/probe/internal/agent"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/containermeta"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/imagepuller"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/memtrim"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/nodeclient"
	"github.com/flotilla-dev/flotilla/controllers/probe/internal/recreate"
	"github.com/flotilla-dev/flotilla/kit/app/shell"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/node/cri"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
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
	// releasePagesAfter is how long after the caches synced the
	// executable's start-up pages are released; 0 never.
	releasePagesAfter time.Duration
}

// Binary describes probe-agent to kit/app/shell.
func Binary() shell.Binary {
	o := &options{nodeName: os.Getenv("NODE_NAME"), batchDelay: 200 * time.Millisecond, maxExecs: agent.DefaultMaxConcurrentExecs,
		maxPulls: imagepuller.DefaultMaxConcurrentPulls, releasePagesAfter: 30 * time.Second}
	return shell.Binary{
		Name:  Name,
		Gates: Gates(),
		AddFlags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.nodeName, "node-name", o.nodeName, "The node this agent probes for (default: $NODE_NAME, from the downward API).")
			fs.DurationVar(&o.batchDelay, "status-batch-delay", o.batchDelay, "Results changed within this delay go into one NodePodProbe status write.")
			fs.StringVar(&o.criSocket, "cri-socket", o.criSocket, "CRI runtime endpoint for exec probes and container recreation (e.g. unix:///run/containerd/containerd.sock); empty: exec probes are reported Unknown and ContainerRecreateRequests are not served.")
			fs.IntVar(&o.maxExecs, "max-concurrent-execs", o.maxExecs, "At most this many exec probes run at once on the node (each is a process in a container); an exec probe that finds no free slot within its timeoutSeconds is skipped, its state unchanged. 0: no limit.")
			fs.IntVar(&o.maxPulls, "max-concurrent-pulls", o.maxPulls, "With ImagePullJobGate, at most this many NodeImage image pulls run at once on the node; the others wait (phase Waiting).")
			fs.DurationVar(&o.releasePagesAfter, "release-startup-pages-after", o.releasePagesAfter, "This long after its caches synced, the agent returns the heap's free pages to the system and unmaps the pages of its own executable that start-up made resident (madvise MADV_DONTNEED on the read-only mappings; pages used again come back from the page cache). 0: never.")
			// Every node runs its own agent: no Lease to win, and the shell
			// has no leader election. The shared flag stays accepted (false,
			// its default here) so manifests that pass it keep working;
			// shell.Run refuses true.
			if f := fs.Lookup("leader-elect"); f != nil {
				_ = f.Value.Set("false")
				f.DefValue = "false"
			}
		},
		Setup: func(ctx context.Context, env *shell.Env) error { return setup(ctx, env, o) },
	}
}

func setup(ctx context.Context, env *shell.Env, o *options) error {
	if o.nodeName == "" {
		return fmt.Errorf("%s needs --node-name or $NODE_NAME", Name)
	}
	if env.RESTConfig == nil {
		return fmt.Errorf("%s needs a REST config", Name)
	}
	nc, err := nodeclient.New(env.RESTConfig)
	if err != nil {
		return err
	}
	// Only this node's pods (all namespaces: --namespace does not apply to
	// an agent) and this node's NodePodProbe are cached.
	inf := nc.Informers(env.Options.SyncPeriod)
	env.AddInformerFactory(inf)
	pods := inf.Pods(agent.NodePodFieldSelector(o.nodeName))
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
	recorder := env.EventRecorderTo(ctx, nc.EventSink(), nodeclient.Scheme)
	if err := addRecreate(env, o, nc, pods, runtime, recorder); err != nil {
		return err
	}
	if err := addContainerMeta(env, nc, pods, runtime, recorder); err != nil {
		return err
	}
	if err := addImagePuller(ctx, env, o, nc, inf, recorder); err != nil {
		return err
	}
	a, err := agent.New(agent.Deps{
		NodeName: o.nodeName, NodePodProbes: nc.NodePodProbes(), PodInformer: pods,
		NodePodProbeInformer: inf.NodePodProbes(agent.NodeNameFieldSelector(o.nodeName)),
		Clock:                env.Clock, BatchDelay: o.batchDelay, Exec: exec, MaxConcurrentExecs: o.maxExecs, Recorder: recorder,
	})
	if err != nil {
		return err
	}
	env.AddController(a)
	if o.releasePagesAfter > 0 {
		env.AddController(pageReleaser{after: o.releasePagesAfter, clock: env.Clock})
	}
	return nil
}

// pageReleaser releases the heap's free pages and the executable's start-up
// pages (internal/memtrim) once: the shell starts it with the other controllers, once the caches
// synced, and it waits after a delay for the first round of probes and
// requests, whose code then stays resident or comes back at once. It is not
// a reconciler: it then only waits for shutdown, and a failure is logged,
// never fatal (the agent only keeps more memory).
type pageReleaser struct {
	after time.Duration
	clock clock.Clock
}

func (pageReleaser) Name() string { return "startup-pages" }

func (p pageReleaser) Run(ctx context.Context, _ int) error {
	logger := klog.FromContext(ctx)
	select {
	case <-ctx.Done():
		return nil
	case <-p.clock.After(p.after):
	}
	anonBefore, anonAfter := memtrim.ReleaseHeap()
	logger.Info("Released the heap's free start-up pages", "rssAnonKiBBefore", anonBefore, "rssAnonKiBAfter", anonAfter)
	before, after, err := memtrim.DropExecutablePages()
	if err != nil {
		logger.Error(err, "Cannot release the executable's start-up pages")
	} else {
		logger.Info("Released the executable's start-up pages", "rssFileKiBBefore", before, "rssFileKiBAfter", after)
	}
	<-ctx.Done()
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
func addContainerMeta(env *shell.Env, nc *nodeclient.Clients, pods cache.SharedIndexInformer, rs criapi.RuntimeService, recorder record.EventRecorder) error {
	if !env.Gates.Enabled(features.InPlaceUpdateEnvFromMetadata) {
		return nil
	}
	if rs == nil {
		env.Logger.Info("InPlaceUpdateEnvFromMetadata is on but --cri-socket is empty: containers are not restarted for env from metadata on this node")
		return nil
	}
	w, err := containermeta.New(containermeta.Deps{
		PodInformer: pods, Pods: podcontrol.NewFor(nc.Pods()), Runtime: rs, Recorder: recorder, Queue: env.Options.Queue,
	})
	if err != nil {
		return err
	}
	env.AddController(w)
	return nil
}

// addRecreate adds the ContainerRecreateRequest worker when KruiseDaemon is on and a CRI runtime is configured.
func addRecreate(env *shell.Env, o *options, nc *nodeclient.Clients, pods cache.SharedIndexInformer,
	rs criapi.RuntimeService, recorder record.EventRecorder) error {
	if !env.Gates.Enabled(features.KruiseDaemon) {
		return nil
	}
	if rs == nil {
		env.Logger.Info("KruiseDaemon is on but --cri-socket is empty: ContainerRecreateRequests are not served on this node")
		return nil
	}
	// The node's active requests, with no resync (as before).
	requests := nc.Informers(0)
	w, err := recreate.New(recreate.Deps{
		NodeName: o.nodeName, Requests: func(ns string) recreate.StatusWriter { return nc.ContainerRecreateRequests(ns) },
		RequestInformer: requests.ContainerRecreateRequests(recreate.NodeLabelSelector(o.nodeName)), PodInformer: pods,
		Runtime: rs, Clock: env.Clock, Recorder: recorder, Queue: env.Options.Queue,
	})
	if err != nil {
		return err
	}
	env.AddInformerFactory(requests)
	env.AddController(w)
	return nil
}

// addImagePuller adds the NodeImage puller when ImagePullJobGate is on and a CRI runtime is configured: it
// watches this node's NodeImage through the agent's factory (field selector metadata.name=<node>).
func addImagePuller(ctx context.Context, env *shell.Env, o *options, nc *nodeclient.Clients,
	inf *nodeclient.Informers, recorder record.EventRecorder) error {
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
		NodeName: o.nodeName, NodeImages: nc.NodeImages(), Secrets: func(ns string) imagepuller.SecretGetter { return nc.Secrets(ns) },
		NodeImageInformer: inf.NodeImages(agent.NodeNameFieldSelector(o.nodeName)), Images: images,
		Clock: env.Clock, Recorder: recorder, Queue: env.Options.Queue, BatchDelay: o.batchDelay,
		MaxConcurrentPulls: o.maxPulls,
	})
	if err != nil {
		return err
	}
	env.AddController(w)
	return nil
}
