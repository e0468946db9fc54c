package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/kit/app/shell"
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
	shell.SetGCPercent(os.Getenv("GOGC"))
	ctx, stop := shell.SignalContext()
	defer stop()
	return shell.ExitCode(b.Name, Run(ctx, b, os.Args[1:], os.Stderr))
}

// Parse parses args for b: shared flags, --feature-gates with b's gates,
// and b's own flags; then validates and resolves gate dependencies.
func Parse(b Binary, args []string, output io.Writer) (*Parsed, error) {
	return shell.Parse(b.Name, b.Gates, b.AddFlags, args, output)
}

// Run parses args, sets up logging (klog routed into zap), metrics and
// clients, and runs b until ctx is done. It is Main without the process
// plumbing; logs go to logOut.
func Run(ctx context.Context, b Binary, args []string, logOut io.Writer) error {
	p, err := Parse(b, args, logOut)
	if err != nil {
		return err
	}
	bt, err := shell.Boot(b.Name, p, logOut)
	if err != nil {
		return err
	}
	defer bt.Close()
	leaderelection.SetProvider(leaderProvider{bt.Metrics.Leader})
	kube, err := kubernetes.NewForConfig(protobufConfig(bt.RESTConfig))
	if err != nil {
		return err
	}
	err = run(klog.NewContext(ctx, bt.Logger), b, bt.Parsed, deps{
		restConfig: bt.RESTConfig,
		kube:       kube,
		metrics:    bt.Metrics,
		logger:     bt.Logger,
		clock:      clock.RealClock{},
		identity:   identity(),
	})
	bt.LogExit(err)
	return err
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
	health := NewHealth()
	var watchdog *leaderelection.HealthzAdaptor
	if opts.LeaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(leaderWatchdogTimeout)
		health.AddHealthz(Check{Name: watchdog.Name(), Check: watchdog.Check})
	}
	srv, err := shell.Serve(logger, opts, d.metrics, health, registerPProf)
	if err != nil {
		return err
	}
	defer srv.Close()
	if d.serving != nil {
		d.serving(srv.Metrics.Addr(), srv.Health.Addr(), health)
	}

	env := &Env{
		Env: shell.Env{
			Name: b.Name, Options: opts, Gates: p.Gates, Logger: logger, Clock: d.clock,
			RESTConfig: d.restConfig, Metrics: d.metrics.Registry, QueueMetrics: d.metrics,
		},
		KubeClient: d.kube,
		Identity:   d.identity,
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

// registerPProf serves net/http/pprof's endpoints (--pprof).
func registerPProf(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
