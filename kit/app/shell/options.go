package shell

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

// DefaultLeaseNamespace is used when POD_NAMESPACE is unset.
const DefaultLeaseNamespace = "flotilla-system"

// Options are the flags every binary shares.
type Options struct {
	// Kubeconfig is a kubeconfig path; empty means in-cluster config.
	Kubeconfig string
	// QPS and Burst limit the binary's API client.
	QPS   float32
	Burst int
	// Workers is the number of concurrent syncs per controller.
	Workers int
	// Namespace restricts informers to one namespace; empty means all.
	Namespace string
	// SyncPeriod is the informers' resync period; 0 disables resync.
	SyncPeriod time.Duration
	// CacheSyncTimeout bounds the wait for informers to sync after the
	// Lease is won; the binary exits with an error when it expires.
	CacheSyncTimeout time.Duration

	// Leader election on a coordination.k8s.io Lease.
	LeaderElect    bool
	LeaseName      string
	LeaseNamespace string
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration

	// MetricsAddr serves /metrics (and /debug/pprof with PProf); HealthAddr
	// serves /healthz and /readyz. "0" disables a server. Port 0 picks a
	// free port (logged at start-up).
	MetricsAddr string
	HealthAddr  string
	PProf       bool

	// Verbosity is the -v log level; LogFormat is json or console.
	Verbosity int
	LogFormat string

	// Queue configures every controller's work queue rate limiters and the
	// initial-list delay.
	Queue controller.QueueOptions
}

// DefaultOptions returns the defaults for binary name: the Lease is named
// after the binary and lives in $POD_NAMESPACE (else flotilla-system).
func DefaultOptions(name string) Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = DefaultLeaseNamespace
	}
	return Options{
		QPS:              30,
		Burst:            50,
		Workers:          3,
		CacheSyncTimeout: 2 * time.Minute,
		LeaderElect:      true,
		LeaseName:        name,
		LeaseNamespace:   ns,
		LeaseDuration:    15 * time.Second,
		RenewDeadline:    10 * time.Second,
		RetryPeriod:      2 * time.Second,
		MetricsAddr:      ":8080",
		HealthAddr:       ":8081",
		LogFormat:        LogFormatJSON,
		Queue:            controller.DefaultQueueOptions(),
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig. Empty means the in-cluster configuration.")
	fs.Float32Var(&o.QPS, "rest-config-qps", o.QPS, "Maximum queries per second to the API server.")
	fs.IntVar(&o.Burst, "rest-config-burst", o.Burst, "Maximum burst of queries to the API server.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Number of concurrent syncs per controller.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Only watch objects in this namespace. Empty means all namespaces.")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod, "Informer resync period. 0 disables periodic resync.")
	fs.DurationVar(&o.CacheSyncTimeout, "controller-cache-sync-timeout", o.CacheSyncTimeout, "How long to wait for informer caches to sync before giving up.")

	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Run controllers only while holding the leader Lease.")
	fs.StringVar(&o.LeaseName, "leader-elect-resource-name", o.LeaseName, "Name of the leader-election Lease.")
	fs.StringVar(&o.LeaseNamespace, "leader-elect-resource-namespace", o.LeaseNamespace, "Namespace of the leader-election Lease (default: $POD_NAMESPACE, else flotilla-system).")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long non-leaders wait before trying to take over an unrenewed Lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader retries renewing before giving up leadership (and exiting).")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "Interval between attempts to acquire or renew the Lease.")

	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address serving /metrics (and /debug/pprof with --pprof). \"0\" disables it.")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "Address serving /healthz and /readyz. \"0\" disables it.")
	fs.BoolVar(&o.PProf, "pprof", o.PProf, "Serve /debug/pprof on the metrics address.")

	fs.IntVarP(&o.Verbosity, "v", "v", o.Verbosity, "Log verbosity: V(n) messages are logged for n <= v.")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "Log encoding: json or console.")

	o.Queue.AddFlags(fs)
}

// Validate reports invalid combinations.
func (o *Options) Validate() error {
	switch {
	case o.QPS <= 0 || o.Burst <= 0:
		return fmt.Errorf("--rest-config-qps and --rest-config-burst must be positive")
	case o.Workers < 1:
		return fmt.Errorf("--workers must be at least 1, got %d", o.Workers)
	case o.CacheSyncTimeout <= 0:
		return fmt.Errorf("--controller-cache-sync-timeout must be positive")
	case o.LogFormat != LogFormatJSON && o.LogFormat != LogFormatConsole:
		return fmt.Errorf("--log-format must be %q or %q, got %q", LogFormatJSON, LogFormatConsole, o.LogFormat)
	case o.Verbosity < 0:
		return fmt.Errorf("-v must not be negative")
	}
	if o.LeaderElect {
		switch {
		case o.LeaseName == "" || o.LeaseNamespace == "":
			return fmt.Errorf("leader election needs --leader-elect-resource-name and --leader-elect-resource-namespace")
		case o.LeaseDuration <= o.RenewDeadline:
			return fmt.Errorf("--leader-elect-lease-duration (%s) must be greater than --leader-elect-renew-deadline (%s)", o.LeaseDuration, o.RenewDeadline)
		case o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod*6/5:
			return fmt.Errorf("--leader-elect-renew-deadline (%s) must be greater than 1.2 × --leader-elect-retry-period (%s)", o.RenewDeadline, o.RetryPeriod)
		}
	}
	return o.Queue.Validate()
}
