package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/kit/features"
)

// SetupFunc creates a binary's informers and controllers and registers them
// with env. It runs once, before leader election, and must not start
// anything itself. Returning an error exits the binary.
type SetupFunc func(ctx context.Context, env *Env) error

// Binary describes one controller binary.
type Binary struct {
	// Name is the binary name, e.g. "cloneset-controller": user agent,
	// logger name and default Lease name.
	Name string
	// Gates are the feature gates this binary registers (and accepts in
	// --feature-gates). Only these; see kit/features.
	Gates []featuregate.Feature
	// AddFlags adds binary-specific flags (optional).
	AddFlags func(fs *pflag.FlagSet)
	// Setup wires informers and controllers (optional: nil runs nothing).
	Setup SetupFunc
}

// ErrLeaderElectionLost is returned when this replica stops holding the
// Lease while it was not asked to shut down.
var ErrLeaderElectionLost = errors.New("leader election lost")

// leaderWatchdogTimeout is how long past its Lease's expiry a leader may go
// on before /healthz fails (kube-controller-manager uses the same 20s).
const leaderWatchdogTimeout = 20 * time.Second

// Main runs b with the process arguments and signals and returns the exit
// code: 0 after a clean shutdown (SIGTERM/SIGINT) or --help, 1 on error
// (including a lost Lease). A second signal exits immediately.
func Main(b Binary) int {
	setGCPercent(os.Getenv("GOGC"))
	ctx, stop := signalContext()
	defer stop()
	err := Run(ctx, b, os.Args[1:], os.Stderr)
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	default:
		fmt.Fprintf(os.Stderr, "%s: %v\n", b.Name, err)
		return 1
	}
}

// DefaultGCPercent is the garbage collector's target when GOGC is not set.
// A controller's heap is mostly its informer caches, live for the process's
// lifetime: Go's default of 100 lets the heap grow to twice that before
// collecting, which is most of the gap between the cache and the peak RSS.
// At 25 the heap peaks at 1.25× the live heap, for more collection while
// objects churn (bench/RESULTS.md: a 2,000-pod scale-up costs ~0.6 CPU-s
// more, peak RSS at 10,000 cached pods 139 → 94 MiB together with the slim
// pod cache). GOGC, and GOMEMLIMIT as a ceiling, still override it.
const DefaultGCPercent = 25

// setGCPercent applies DefaultGCPercent unless the GOGC environment variable
// (given) chose a value, which the runtime has already applied.
func setGCPercent(gogc string) {
	if gogc == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
}

func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-ch
		cancel()
		<-ch
		os.Exit(1)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

// Parsed is the result of parsing a binary's command line.
type Parsed struct {
	Options Options
	Gates   featuregate.MutableFeatureGate
	// Forced lists gates that dependency rules switched off.
	Forced []featuregate.Feature
}

// Parse parses args for b: shared flags, --feature-gates with b's gates,
// and b's own flags; then validates and resolves gate dependencies.
func Parse(b Binary, args []string, output io.Writer) (*Parsed, error) {
	gate, err := features.NewGate(b.Gates...)
	if err != nil {
		return nil, err
	}
	opts := DefaultOptions(b.Name)
	fs := pflag.NewFlagSet(b.Name, pflag.ContinueOnError)
	fs.SetOutput(output)
	fs.SortFlags = false
	opts.AddFlags(fs)
	gate.AddFlag(fs)
	if b.AddFlags != nil {
		b.AddFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	forced, err := features.Resolve(gate)
	if err != nil {
		return nil, err
	}
	return &Parsed{Options: opts, Gates: gate, Forced: forced}, nil
}

// Run parses args, sets up logging (klog routed into zap), metrics and
// clients, and runs b until ctx is done. It is Main without the process
// plumbing; logs go to logOut.
func Run(ctx context.Context, b Binary, args []string, logOut io.Writer) error {
	p, err := Parse(b, args, logOut)
	if err != nil {
		return err
	}
	logger, z, err := NewLogger(logOut, p.Options.LogFormat, p.Options.Verbosity)
	if err != nil {
		return err
	}
	defer func() { _ = z.Sync() }()
	logger = logger.WithName(b.Name)
	if err := RouteKlog(logger, p.Options.Verbosity); err != nil {
		return err
	}
	defer klog.Flush()

	metrics := NewMetrics()
	metrics.InstallClientGoProviders()

	cfg, err := restConfig(p.Options, b.Name)
	if err != nil {
		logger.Error(err, "Cannot load API client configuration")
		return err
	}
	kube, err := kubernetes.NewForConfig(protobufConfig(cfg))
	if err != nil {
		return err
	}
	err = run(klog.NewContext(ctx, logger), b, p, deps{
		restConfig: cfg,
		kube:       kube,
		metrics:    metrics,
		logger:     logger,
		clock:      clock.RealClock{},
		identity:   identity(),
	})
	if err != nil {
		logger.Error(err, "Exiting with error")
	} else {
		logger.Info("Shut down cleanly")
	}
	return err
}

func restConfig(o Options, userAgent string) (*rest.Config, error) {
	var (
		cfg *rest.Config
		err error
	)
	if o.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, err
	}
	cfg.QPS = o.QPS
	cfg.Burst = o.Burst
	cfg.UserAgent = userAgent
	return cfg, nil
}

// protobufConfig is cfg for the Kubernetes clientset: built-in types travel
// as protobuf, which the API server encodes and the informers decode at a
// fraction of JSON's CPU and garbage (pod watch events dominate both). The
// Flotilla clientset keeps JSON: custom resources have no protobuf encoding.
func protobufConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentType = runtime.ContentTypeProtobuf
	out.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return out
}

func identity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return host + "_" + string(uuid.NewUUID())
}

// deps are the collaborators run needs; tests supply fakes.
type deps struct {
	restConfig *rest.Config
	kube       kubernetes.Interface
	metrics    *Metrics
	logger     logr.Logger
	clock      clock.WithTicker
	identity   string
	// serving, if set, is called with the bound addresses once the servers
	// listen (tests use it with port 0).
	serving func(metricsAddr, healthAddr string, h *Health)
}

func run(ctx context.Context, b Binary, p *Parsed, d deps) error {
	logger := d.logger
	opts := p.Options
	logger.Info("Starting", "leaderElect", opts.LeaderElect, "namespace", opts.Namespace,
		"workers", opts.Workers, "featureGates", features.Values(p.Gates))
	if len(p.Forced) > 0 {
		logger.Info("Feature gates switched off by dependency rules", "gates", p.Forced)
	}

	health := NewHealth()
	var watchdog *leaderelection.HealthzAdaptor
	if opts.LeaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(leaderWatchdogTimeout)
		health.AddHealthz(Check{Name: watchdog.Name(), Check: watchdog.Check})
	}
	ms, err := startServer(logger, "metrics", opts.MetricsAddr, metricsMux(d.metrics, opts.PProf))
	if err != nil {
		return err
	}
	defer logShutdown(logger, ms)
	hs, err := startServer(logger, "health", opts.HealthAddr, health.Handler())
	if err != nil {
		return err
	}
	defer logShutdown(logger, hs)
	if d.serving != nil {
		d.serving(ms.Addr(), hs.Addr(), health)
	}

	env := &Env{
		Name:         b.Name,
		Options:      opts,
		Gates:        p.Gates,
		Logger:       logger,
		Clock:        d.clock,
		RESTConfig:   d.restConfig,
		KubeClient:   d.kube,
		Metrics:      d.metrics.Registry,
		Identity:     d.identity,
		queueMetrics: d.metrics,
	}
	defer env.shutdown()
	if b.Setup != nil {
		if err := b.Setup(ctx, env); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	logger.Info("Set up", "controllers", env.Controllers())
	return runReplicaAndLead(ctx, env, health, func(ctx context.Context) error {
		if !opts.LeaderElect {
			return env.runLeading(ctx, health)
		}
		return runLeaderElection(ctx, opts, d, watchdog, func(ctx context.Context) error {
			return env.runLeading(ctx, health)
		})
	})
}

// runReplicaAndLead runs the replica components (on every replica, from now
// on) beside lead (leader election, then the controllers). A failing replica
// component stops lead, which releases the Lease; the first error wins.
func runReplicaAndLead(ctx context.Context, env *Env, health *Health, lead func(context.Context) error) error {
	replicaCtx, stopReplica := context.WithCancel(ctx)
	defer stopReplica()
	replicaErrs := env.startReplica(replicaCtx, health)
	if replicaErrs == nil {
		return lead(ctx)
	}
	leadCtx, stopLead := context.WithCancel(ctx)
	defer stopLead()
	var replicaErr error
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for err := range replicaErrs {
			if err != nil && replicaErr == nil && replicaCtx.Err() == nil {
				replicaErr = err
				stopLead()
			}
		}
	}()
	leadErr := lead(leadCtx)
	stopReplica()
	select {
	case <-watched:
	case <-time.After(leadStopTimeout):
		klog.FromContext(ctx).Info("Replica components did not stop in time", "timeout", leadStopTimeout)
		return errors.Join(leadErr, errors.New("replica components did not stop in time"))
	}
	if replicaErr != nil {
		return replicaErr
	}
	return leadErr
}

func logShutdown(logger logr.Logger, s *server) {
	if err := s.shutdown(5 * time.Second); err != nil {
		logger.Error(err, "Server shutdown")
	}
}
