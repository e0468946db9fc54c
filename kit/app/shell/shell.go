package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/kit/features"
)

// Binary describes a binary that runs on this package alone (no clientset,
// no leader election): the node agent.
type Binary struct {
	// Name is the binary name: user agent and logger name.
	Name string
	// Gates are the feature gates this binary registers (and accepts in
	// --feature-gates). Only these; see kit/features.
	Gates []featuregate.Feature
	// AddFlags adds binary-specific flags (optional).
	AddFlags func(fs *pflag.FlagSet)
	// Setup wires informers and controllers (optional: nil runs nothing).
	Setup func(ctx context.Context, env *Env) error
}

// Main runs b with the process arguments and signals and returns the exit
// code: 0 after a clean shutdown (SIGTERM/SIGINT) or --help, 1 on error.
// A second signal exits immediately.
func Main(b Binary) int {
	SetGCPercent(os.Getenv("GOGC"))
	ctx, stop := SignalContext()
	defer stop()
	return ExitCode(b.Name, Run(ctx, b, os.Args[1:], os.Stderr))
}

// ExitCode is Main's exit code for err, which it prints first.
func ExitCode(name string, err error) int {
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	return 1
}

// Run parses args, sets up logging, metrics and health, and runs b's
// controllers (leader election is not offered: --leader-elect must be
// false) until ctx is done. Logs go to logOut.
func Run(ctx context.Context, b Binary, args []string, logOut io.Writer) error {
	p, err := Parse(b.Name, b.Gates, b.AddFlags, args, logOut)
	if err != nil {
		return err
	}
	if p.Options.LeaderElect {
		return fmt.Errorf("%s runs one replica per node and has no leader election: --leader-elect must be false", b.Name)
	}
	bt, err := Boot(b.Name, p, logOut)
	if err != nil {
		return err
	}
	defer bt.Close()
	ctx = klog.NewContext(ctx, bt.Logger)
	err = run(ctx, b, bt)
	bt.LogExit(err)
	return err
}

func run(ctx context.Context, b Binary, bt *Booted) error {
	health := NewHealth()
	srv, err := Serve(bt.Logger, bt.Parsed.Options, bt.Metrics, health, nil)
	if err != nil {
		return err
	}
	defer srv.Close()
	env := &Env{
		Name: b.Name, Options: bt.Parsed.Options, Gates: bt.Parsed.Gates, Logger: bt.Logger,
		Clock: clock.RealClock{}, RESTConfig: bt.RESTConfig, Metrics: bt.Metrics.Registry, QueueMetrics: bt.Metrics,
	}
	defer env.Shutdown()
	if b.Setup != nil {
		if err := b.Setup(ctx, env); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	bt.Logger.Info("Set up", "controllers", env.Controllers())
	return env.RunControllers(ctx, health)
}

// Booted is what every binary has before its clients: parsed flags, the
// logger (klog routed into it), the metrics registry (client-go's hooks
// pointed at it) and the REST configuration.
type Booted struct {
	Parsed     *Parsed
	Logger     logr.Logger
	Metrics    *Metrics
	RESTConfig *rest.Config
	zap        *zap.Logger
}

// Boot takes the parsed command line of the binary name, builds the logger
// (writing to logOut), routes klog into it, installs the metrics and loads
// the REST configuration (--kubeconfig, else in-cluster). Close flushes the
// logs.
func Boot(name string, p *Parsed, logOut io.Writer) (*Booted, error) {
	logger, z, err := NewLogger(logOut, p.Options.LogFormat, p.Options.Verbosity)
	if err != nil {
		return nil, err
	}
	logger = logger.WithName(name)
	bt := &Booted{Parsed: p, Logger: logger, zap: z}
	if err := RouteKlog(logger, p.Options.Verbosity); err != nil {
		bt.Close()
		return nil, err
	}
	bt.Metrics = NewMetrics()
	bt.Metrics.InstallClientGoProviders()
	if bt.RESTConfig, err = RESTConfig(p.Options, name); err != nil {
		logger.Error(err, "Cannot load API client configuration")
		bt.Close()
		return nil, err
	}
	logger.Info("Starting", "leaderElect", p.Options.LeaderElect, "namespace", p.Options.Namespace,
		"workers", p.Options.Workers, "featureGates", features.Values(p.Gates))
	if len(p.Forced) > 0 {
		logger.Info("Feature gates switched off by dependency rules", "gates", p.Forced)
	}
	return bt, nil
}

// LogExit logs how the binary ends.
func (b *Booted) LogExit(err error) {
	if err != nil {
		b.Logger.Error(err, "Exiting with error")
	} else {
		b.Logger.Info("Shut down cleanly")
	}
}

// Close flushes the logs.
func (b *Booted) Close() {
	_ = b.zap.Sync()
	klog.Flush()
}

// Servers are the metrics and health servers of a binary.
type Servers struct {
	logger          logr.Logger
	Metrics, Health *Server
}

// Serve starts the metrics server and the health server on the addresses of
// o; either may be disabled ("0"). With --pprof, pprof registers the
// profiling endpoints on the metrics server; a binary that has none (nil)
// refuses --pprof rather than ignore it.
func Serve(logger logr.Logger, o Options, m *Metrics, h *Health, pprof func(*http.ServeMux)) (*Servers, error) {
	if !o.PProf {
		pprof = nil
	} else if pprof == nil {
		return nil, errors.New("--pprof: this binary is built without the profiling endpoints")
	}
	ms, err := StartServer(logger, "metrics", o.MetricsAddr, MetricsMux(m, pprof))
	if err != nil {
		return nil, err
	}
	hs, err := StartServer(logger, "health", o.HealthAddr, h.Handler())
	if err != nil {
		logShutdown(logger, ms)
		return nil, err
	}
	return &Servers{logger: logger, Metrics: ms, Health: hs}, nil
}

// Close shuts both servers down.
func (s *Servers) Close() {
	logShutdown(s.logger, s.Health)
	logShutdown(s.logger, s.Metrics)
}

func logShutdown(logger logr.Logger, s *Server) {
	if err := s.Shutdown(5 * time.Second); err != nil {
		logger.Error(err, "Server shutdown")
	}
}

// Parsed is the result of parsing a binary's command line.
type Parsed struct {
	Options Options
	Gates   featuregate.MutableFeatureGate
	// Forced lists gates that dependency rules switched off.
	Forced []featuregate.Feature
}

// Parse parses args for the binary name: shared flags, --feature-gates with
// gates, and addFlags' own flags (nil: none); then validates and resolves
// gate dependencies.
func Parse(name string, gates []featuregate.Feature, addFlags func(*pflag.FlagSet), args []string, output io.Writer) (*Parsed, error) {
	gate, err := features.NewGate(gates...)
	if err != nil {
		return nil, err
	}
	opts := DefaultOptions(name)
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(output)
	fs.SortFlags = false
	opts.AddFlags(fs)
	gate.AddFlag(fs)
	if addFlags != nil {
		addFlags(fs)
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

// RESTConfig loads the API client configuration (--kubeconfig, else
// in-cluster) with the flags' QPS and burst and userAgent.
func RESTConfig(o Options, userAgent string) (*rest.Config, error) {
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

// DefaultGCPercent is the garbage collector's target when GOGC is not set.
// A controller's heap is mostly its informer caches, live for the process's
// lifetime: Go's default of 100 lets the heap grow to twice that before
// collecting, which is most of the gap between the cache and the peak RSS.
// At 25 the heap peaks at 1.25× the live heap, for more collection while
// objects churn (bench/RESULTS.md: a 2,000-pod scale-up costs ~0.6 CPU-s
// more, peak RSS at 10,000 cached pods 139 → 94 MiB together with the slim
// pod cache). GOGC, and GOMEMLIMIT as a ceiling, still override it.
const DefaultGCPercent = 25

// SetGCPercent applies DefaultGCPercent unless the GOGC environment variable
// (given) chose a value, which the runtime has already applied.
func SetGCPercent(gogc string) {
	if gogc == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
}

// SignalContext is cancelled at the first SIGINT or SIGTERM; a second one
// exits the process with 1.
func SignalContext() (context.Context, context.CancelFunc) {
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
