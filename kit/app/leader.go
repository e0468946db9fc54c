package app

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// leadStopTimeout bounds how long we wait for controllers to stop after the
// Lease is lost or the process is asked to stop.
const leadStopTimeout = 30 * time.Second

// trackingLock notes, synchronously, that the elector acquired the Lease:
// client-go records the "became leader" event right before it starts
// OnStartedLeading in a goroutine, so after Run returns we know whether to
// wait for that goroutine.
type trackingLock struct {
	resourcelock.Interface
	acquired atomic.Bool
}

func (l *trackingLock) RecordEvent(s string) {
	if s == "became leader" {
		l.acquired.Store(true)
	}
	l.Interface.RecordEvent(s)
}

// runLeaderElection campaigns for the Lease and runs lead while holding it.
// It returns nil when ctx ends (the Lease is released), lead's error if lead
// fails, and ErrLeaderElectionLost if the Lease is lost otherwise.
func runLeaderElection(ctx context.Context, opts Options, d deps, watchdog *leaderelection.HealthzAdaptor, lead func(context.Context) error) error {
	logger := klog.FromContext(ctx).WithValues("lease", opts.LeaseNamespace+"/"+opts.LeaseName, "identity", d.identity)
	lock := &trackingLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: opts.LeaseNamespace, Name: opts.LeaseName},
		Client:     d.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: d.identity},
	}}

	leCtx, cancelLE := context.WithCancel(ctx)
	defer cancelLE()
	leadDone := make(chan struct{})
	var leadErr atomic.Pointer[error]

	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            opts.LeaseName,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				defer close(leadDone)
				logger.Info("Acquired the Lease; starting informers and controllers")
				if err := lead(klog.NewContext(lctx, klog.FromContext(ctx))); err != nil {
					leadErr.Store(&err)
					cancelLE()
				}
			},
			OnStoppedLeading: func() {
				logger.Info("Stopped leading")
			},
			OnNewLeader: func(id string) {
				if id != d.identity {
					logger.Info("Another replica leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	if watchdog != nil {
		watchdog.SetLeaderElection(le)
	}
	logger.Info("Campaigning for the Lease")
	le.Run(klog.NewContext(leCtx, logger))

	if lock.acquired.Load() {
		select {
		case <-leadDone:
		case <-time.After(leadStopTimeout):
			logger.Info("Controllers did not stop in time", "timeout", leadStopTimeout)
		}
	}
	switch {
	case leadErr.Load() != nil:
		return *leadErr.Load()
	case ctx.Err() != nil:
		return nil
	case lock.acquired.Load():
		return fmt.Errorf("%w: lease %s/%s", ErrLeaderElectionLost, opts.LeaseNamespace, opts.LeaseName)
	default:
		return fmt.Errorf("leader election stopped without acquiring lease %s/%s", opts.LeaseNamespace, opts.LeaseName)
	}
}

// leaderProvider feeds client-go's leader-election metric hook into the
// leader_election_master_status gauge of the binary's registry.
type leaderProvider struct{ v *prometheus.GaugeVec }

func (p leaderProvider) NewLeaderMetric() leaderelection.LeaderMetric { return p }
func (p leaderProvider) On(name string)                               { p.v.WithLabelValues(name).Set(1) }
func (p leaderProvider) Off(name string)                              { p.v.WithLabelValues(name).Set(0) }
func (p leaderProvider) SlowpathExercised(string)                     {}
