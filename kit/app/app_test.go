package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"k8s.io/client-go/rest"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/features"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testBinary(setup SetupFunc) Binary {
	return Binary{
		Name:  "test-controller",
		Gates: []featuregate.Feature{features.CloneSetShortHash, features.PodWebhook, features.PodUnavailableBudgetDeleteGate},
		Setup: setup,
	}
}

func TestParse(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	var extra string
	b := testBinary(nil)
	b.AddFlags = func(fs *pflag.FlagSet) { fs.StringVar(&extra, "extra", "d", "") }
	p, err := Parse(b, []string{
		"--kubeconfig=/k", "--rest-config-qps=5", "--rest-config-burst=6", "--workers=7", "--namespace=n",
		"--leader-elect=false", "--leader-elect-resource-name=l", "--leader-elect-resource-namespace=ln",
		"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=0", "--pprof", "-v=4", "--log-format=console",
		"--rate-limiter-qps=3", "--disable-initial-list-delay",
		"--feature-gates=CloneSetShortHash=true,PodWebhook=false", "--extra=e",
	}, io.Discard)
	require.NoError(t, err)
	o := p.Options
	assert.Equal(t, "/k", o.Kubeconfig)
	assert.Equal(t, float32(5), o.QPS)
	assert.Equal(t, 6, o.Burst)
	assert.Equal(t, 7, o.Workers)
	assert.Equal(t, "n", o.Namespace)
	assert.False(t, o.LeaderElect)
	assert.Equal(t, "l", o.LeaseName)
	assert.Equal(t, "ln", o.LeaseNamespace)
	assert.Equal(t, "127.0.0.1:0", o.MetricsAddr)
	assert.Equal(t, "0", o.HealthAddr)
	assert.True(t, o.PProf)
	assert.Equal(t, 4, o.Verbosity)
	assert.Equal(t, "console", o.LogFormat)
	assert.Equal(t, 3.0, o.Queue.QPS)
	assert.True(t, o.Queue.DisableInitialDelay)
	assert.Equal(t, "e", extra)
	assert.True(t, p.Gates.Enabled(features.CloneSetShortHash))
	assert.False(t, p.Gates.Enabled(features.PodUnavailableBudgetDeleteGate), "forced off by PodWebhook=false")
	assert.Equal(t, []featuregate.Feature{features.PodUnavailableBudgetDeleteGate}, p.Forced)

	_, err = Parse(b, []string{"--feature-gates=StatefulSetStartOrdinal=true"}, io.Discard)
	assert.Error(t, err, "gate not registered by this binary")
	_, err = Parse(b, []string{"--log-format=xml"}, io.Discard)
	assert.Error(t, err)
	_, err = Parse(b, []string{"--leader-elect-lease-duration=1s", "--leader-elect-renew-deadline=2s"}, io.Discard)
	assert.Error(t, err)
	_, err = Parse(b, []string{"stray"}, io.Discard)
	assert.Error(t, err)
	_, err = Parse(b, []string{"--help"}, io.Discard)
	assert.ErrorIs(t, err, pflag.ErrHelp)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// harness runs `run` with a fake clientset and captures addresses and logs.
type harness struct {
	t       *testing.T
	client  *fake.Clientset
	logs    *syncBuffer
	health  *Health
	addrs   chan [2]string
	done    chan error
	cancel  context.CancelFunc
	healthz string
	metrics string
}

func startHarness(t *testing.T, b Binary, args ...string) *harness {
	t.Helper()
	return startHarnessWithObjects(t, b, args)
}

func startHarnessWithObjects(t *testing.T, b Binary, args []string, objs ...runtime.Object) *harness {
	t.Helper()
	return startHarnessWithClient(t, b, args, nil, objs...)
}

func startHarnessWithClient(t *testing.T, b Binary, args []string, prepare func(*fake.Clientset), objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	if prepare != nil {
		prepare(client)
	}
	h := &harness{t: t, client: client, logs: &syncBuffer{}, addrs: make(chan [2]string, 1), done: make(chan error, 1)}
	args = append([]string{"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0"}, args...)
	p, err := Parse(b, args, io.Discard)
	require.NoError(t, err)
	logger, _, err := NewLogger(h.logs, LogFormatJSON, 4)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	h.cancel = cancel
	var healthCh = make(chan *Health, 1)
	go func() {
		h.done <- run(ctx, b, p, deps{
			kube: h.client, metrics: NewMetrics(), logger: logger, clock: clock.RealClock{}, identity: "me",
			serving: func(m, hz string, hh *Health) { h.addrs <- [2]string{m, hz}; healthCh <- hh },
		})
	}()
	select {
	case a := <-h.addrs:
		h.metrics, h.healthz = "http://"+a[0], "http://"+a[1]
		h.health = <-healthCh
	case err := <-h.done:
		// A run that served and then ended at once (a crashing controller)
		// makes both channels ready and select picks either: it only
		// returned early if it never served.
		select {
		case a := <-h.addrs:
			h.metrics, h.healthz = "http://"+a[0], "http://"+a[1]
			h.health = <-healthCh
			h.done <- err // for wait
		default:
			t.Fatalf("run returned early: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("servers did not start")
	}
	return h
}

func (h *harness) stop() error {
	h.cancel()
	select {
	case err := <-h.done:
		return err
	case <-time.After(10 * time.Second):
		h.t.Fatal("run did not return after cancel")
		return nil
	}
}

func (h *harness) wait(timeout time.Duration) error {
	select {
	case err := <-h.done:
		return err
	case <-time.After(timeout):
		h.t.Fatal("run did not return")
		return nil
	}
}

func (h *harness) status(path string) int {
	resp, err := http.Get(h.healthz + path)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

type fakeController struct {
	name    string
	started atomic.Bool
	stopped atomic.Bool
	workers atomic.Int32
	err     error
}

func (f *fakeController) Name() string { return f.name }
func (f *fakeController) Run(ctx context.Context, workers int) error {
	f.workers.Store(int32(workers))
	f.started.Store(true)
	if f.err != nil {
		return f.err
	}
	<-ctx.Done()
	f.stopped.Store(true)
	return nil
}

func TestRunWithoutLeaderElection(t *testing.T) {
	var synced atomic.Bool
	fc := &fakeController{name: "fake"}
	envCh := make(chan *Env, 1)
	h := startHarness(t, testBinary(func(ctx context.Context, env *Env) error {
		defer func() { envCh <- env }()
		f := env.NewKubeInformerFactory()
		f.Core().V1().Pods().Informer()
		env.AddSource(Source{Name: "gate", Start: func(context.Context) {}, HasSynced: synced.Load})
		env.AddController(fc)
		return nil
	}), "--leader-elect=false", "--workers=5", "--feature-gates=CloneSetShortHash=true")
	gotEnv := <-envCh

	assert.True(t, gotEnv.Gates.Enabled(features.CloneSetShortHash))
	assert.Equal(t, "test-controller", gotEnv.Name)
	assert.NotNil(t, gotEnv.QueueConfig().MetricsProvider)
	assert.Equal(t, http.StatusOK, h.status("/healthz"))
	assert.Never(t, func() bool { return fc.started.Load() }, 100*time.Millisecond, 5*time.Millisecond, "controllers wait for sync")
	assert.Equal(t, http.StatusInternalServerError, h.status("/readyz"), "not ready before sync")

	synced.Store(true)
	require.Eventually(t, func() bool { return h.status("/readyz") == http.StatusOK }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, fc.started.Load, 5*time.Second, time.Millisecond)
	assert.Equal(t, int32(5), fc.workers.Load())

	code, body := get(t, h.metrics+"/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "go_goroutines")
	code, _ = get(t, h.metrics+"/debug/pprof/")
	assert.Equal(t, http.StatusNotFound, code, "pprof off by default")

	require.NoError(t, h.stop())
	assert.True(t, fc.stopped.Load())
}

func TestRunWithNoReconcilerIdles(t *testing.T) {
	h := startHarness(t, testBinary(nil), "--leader-elect=false")
	require.Eventually(t, func() bool { return h.status("/readyz") == http.StatusOK }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(h.logs.String(), "No reconciler is enabled") }, 5*time.Second, time.Millisecond)
	assert.Contains(t, h.logs.String(), `"level":"info"`)
	require.NoError(t, h.stop())
}

func TestRunSetupErrorAndControllerError(t *testing.T) {
	h := startHarness(t, testBinary(func(context.Context, *Env) error { return errors.New("nope") }), "--leader-elect=false")
	err := h.wait(5 * time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "setup: nope")

	bad := &fakeController{name: "bad", err: errors.New("crashed")}
	good := &fakeController{name: "good"}
	h = startHarness(t, testBinary(func(_ context.Context, env *Env) error {
		env.AddController(good)
		env.AddController(bad)
		return nil
	}), "--leader-elect=false")
	err = h.wait(5 * time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "controller bad: crashed")
	assert.True(t, good.stopped.Load(), "a failing controller stops the others")
}

func leaseArgs() []string {
	return []string{"--leader-elect-lease-duration=1s", "--leader-elect-renew-deadline=500ms",
		"--leader-elect-retry-period=100ms", "--leader-elect-resource-namespace=flotilla-system"}
}

func TestLeaderElectionStartsControllersOnlyWhenLeading(t *testing.T) {
	fc := &fakeController{name: "fake"}
	h := startHarness(t, testBinary(func(_ context.Context, env *Env) error {
		env.AddController(fc)
		return nil
	}), leaseArgs()...)

	require.Eventually(t, fc.started.Load, 10*time.Second, 5*time.Millisecond)
	lease, err := h.client.CoordinationV1().Leases("flotilla-system").Get(context.Background(), "test-controller", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "me", *lease.Spec.HolderIdentity)
	require.Eventually(t, func() bool { return h.status("/readyz") == http.StatusOK }, 5*time.Second, 10*time.Millisecond)
	code, body := get(t, h.healthz+"/healthz?verbose")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "[+]leaderElection ok")

	// Graceful stop releases the Lease.
	require.NoError(t, h.stop())
	assert.True(t, fc.stopped.Load())
	lease, err = h.client.CoordinationV1().Leases("flotilla-system").Get(context.Background(), "test-controller", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, ptrString(lease.Spec.HolderIdentity), "lease released")
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestLeaderElectionWaitsForHeldLease(t *testing.T) {
	fc := &fakeController{name: "fake"}
	b := testBinary(func(_ context.Context, env *Env) error {
		env.AddController(fc)
		return nil
	})
	// Someone else holds a fresh, long lease: we must not start.
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "test-controller"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("other"),
			LeaseDurationSeconds: ptr.To(int32(3600)),
			AcquireTime:          ptr.To(metav1.NewMicroTime(time.Now())),
			RenewTime:            ptr.To(metav1.NewMicroTime(time.Now())),
		},
	}
	hh := startHarnessWithObjects(t, b, leaseArgs(), held)
	assert.Never(t, fc.started.Load, 500*time.Millisecond, 10*time.Millisecond)
	assert.Equal(t, http.StatusInternalServerError, hh.status("/readyz"))
	assert.Equal(t, http.StatusOK, hh.status("/healthz"), "standby is healthy")
	require.NoError(t, hh.stop())
}

func TestLeaderElectionLostExitsWithError(t *testing.T) {
	fc := &fakeController{name: "fake"}
	var failRenewals atomic.Bool
	b := testBinary(func(_ context.Context, env *Env) error {
		env.AddController(fc)
		return nil
	})
	h := startHarnessWithClient(t, b, leaseArgs(), func(c *fake.Clientset) {
		c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			if failRenewals.Load() {
				return true, nil, errors.New("apiserver unreachable")
			}
			return false, nil, nil
		})
	})
	require.Eventually(t, fc.started.Load, 10*time.Second, 5*time.Millisecond)

	// Every renewal fails from now on.
	failRenewals.Store(true)
	err := h.wait(10 * time.Second)
	require.ErrorIs(t, err, ErrLeaderElectionLost)
	assert.True(t, fc.stopped.Load(), "controllers were cancelled")
}

func mustURL(s string) url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return *u
}

func TestProtobufConfig(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 5}
	pb := protobufConfig(cfg)
	assert.Equal(t, "application/vnd.kubernetes.protobuf", pb.ContentType)
	assert.Equal(t, "application/vnd.kubernetes.protobuf,application/json", pb.AcceptContentTypes)
	assert.Equal(t, float32(5), pb.QPS)
	assert.Empty(t, cfg.ContentType, "the Flotilla clientset's config keeps JSON")
}

// A webhook binary serves on every replica: its replica components run and
// make a standby ready while another replica holds the Lease, and the
// controllers still wait for the Lease.
func TestReplicaComponentsRunOnStandby(t *testing.T) {
	fc := &fakeController{name: "fake"}
	var serving atomic.Bool
	running := make(chan struct{})
	b := testBinary(func(_ context.Context, env *Env) error {
		f := env.NewKubeInformerFactory()
		f.Core().V1().Pods().Informer() // leader-only
		rf := informers.NewSharedInformerFactory(env.KubeClient, 0)
		rf.Core().V1().ConfigMaps().Informer()
		env.AddReplicaInformerFactory(rf)
		env.AddReplicaComponent(ReplicaComponent{Name: "webhook", Run: func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			return nil
		}, Ready: func() error {
			if !serving.Load() {
				return errors.New("not serving yet")
			}
			return nil
		}})
		env.AddController(fc)
		return nil
	})
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "test-controller"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("other"),
			LeaseDurationSeconds: ptr.To(int32(3600)),
			AcquireTime:          ptr.To(metav1.NewMicroTime(time.Now())),
			RenewTime:            ptr.To(metav1.NewMicroTime(time.Now())),
		},
	}
	h := startHarnessWithObjects(t, b, leaseArgs(), held)
	select {
	case <-running:
	case <-time.After(5 * time.Second):
		t.Fatal("the replica component did not start on a standby")
	}
	code, body := get(t, h.healthz+"/readyz?verbose")
	assert.Equal(t, http.StatusInternalServerError, code, "not ready while the component is not")
	assert.Contains(t, body, "[-]webhook failed: not serving yet")
	assert.NotContains(t, body, "]informer-sync", "the leader's informer sync no longer gates readiness")

	serving.Store(true)
	require.Eventually(t, func() bool { return h.status("/readyz") == http.StatusOK }, 5*time.Second, 10*time.Millisecond)
	_, body = get(t, h.healthz+"/readyz?verbose")
	assert.Contains(t, body, "[+]replica-informer-sync ok")
	assert.Contains(t, body, "[+]webhook ok")
	assert.Never(t, fc.started.Load, 300*time.Millisecond, 10*time.Millisecond, "controllers wait for the Lease")
	require.NoError(t, h.stop())
}

// A replica component that fails stops the binary (exit 1) and its
// controllers.
func TestReplicaComponentFailureStopsBinary(t *testing.T) {
	fc := &fakeController{name: "fake"}
	fail := make(chan struct{})
	h := startHarness(t, testBinary(func(_ context.Context, env *Env) error {
		env.AddReplicaComponent(ReplicaComponent{Name: "webhook", Run: func(ctx context.Context) error {
			select {
			case <-fail:
				return errors.New("listener closed")
			case <-ctx.Done():
				return nil
			}
		}})
		env.AddController(fc)
		return nil
	}), "--leader-elect=false")
	require.Eventually(t, fc.started.Load, 5*time.Second, 5*time.Millisecond)
	close(fail)
	err := h.wait(5 * time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "replica component webhook: listener closed")
	assert.True(t, fc.stopped.Load(), "controllers were cancelled")
}

// blockedFactory is a replica informer factory whose caches sync only once
// release is closed: a cache that needs the conversion webhook an Early
// component serves.
type blockedFactory struct{ release chan struct{} }

func (f blockedFactory) Start(<-chan struct{}) {}
func (f blockedFactory) WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool {
	select {
	case <-f.release:
		return map[reflect.Type]bool{reflect.TypeOf(f): true}
	case <-stop:
		return map[reflect.Type]bool{reflect.TypeOf(f): false}
	}
}

// An Early replica component (a CRD conversion webhook) runs before the
// replica caches sync, since they may need it; the others wait for them, and
// ReplicaSyncedFrom tells the early one when they synced.
func TestEarlyReplicaComponentStartsBeforeCachesSync(t *testing.T) {
	release := make(chan struct{})
	early, late := make(chan func() bool, 1), make(chan struct{})
	h := startHarness(t, testBinary(func(_ context.Context, env *Env) error {
		env.AddReplicaInformerFactory(blockedFactory{release: release})
		env.AddReplicaComponent(ReplicaComponent{Name: "convert", Early: true, Run: func(ctx context.Context) error {
			early <- ReplicaSyncedFrom(ctx)
			<-ctx.Done()
			return nil
		}})
		env.AddReplicaComponent(ReplicaComponent{Name: "admit", Run: func(ctx context.Context) error {
			close(late)
			<-ctx.Done()
			return nil
		}})
		return nil
	}), "--leader-elect=false")
	var synced func() bool
	select {
	case synced = <-early:
	case <-time.After(5 * time.Second):
		t.Fatal("the early component did not start while the caches were not synced")
	}
	require.NotNil(t, synced)
	assert.False(t, synced(), "the caches have not synced")
	assert.Never(t, func() bool {
		select {
		case <-late:
			return true
		default:
			return false
		}
	}, 300*time.Millisecond, 10*time.Millisecond, "the other components wait for the caches")
	assert.Equal(t, http.StatusInternalServerError, h.status("/readyz"), "not ready before the caches synced")
	close(release)
	select {
	case <-late:
	case <-time.After(5 * time.Second):
		t.Fatal("the other component did not start once the caches synced")
	}
	assert.True(t, synced())
	require.NoError(t, h.stop())
}

// client-go's leader-election hook lands in the registry's
// leader_election_master_status gauge (kit/app/shell registers it; only
// kit/app links leader election).
func TestLeaderMetric(t *testing.T) {
	m := NewMetrics()
	lm := leaderProvider{m.Leader}.NewLeaderMetric()
	lm.On("lease")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.Leader.WithLabelValues("lease")))
	lm.Off("lease")
	assert.Equal(t, 0.0, testutil.ToFloat64(m.Leader.WithLabelValues("lease")))
}

// kit/app binaries serve net/http/pprof's endpoints with --pprof.
func TestPProf(t *testing.T) {
	h := startHarness(t, testBinary(nil), "--leader-elect=false", "--pprof")
	code, body := get(t, h.metrics+"/debug/pprof/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "goroutine")
	require.NoError(t, h.stop())
}
