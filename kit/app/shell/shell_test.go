package shell

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

func TestDefaultOptions(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	o := DefaultOptions("x-controller")
	assert.Equal(t, "x-controller", o.LeaseName)
	assert.Equal(t, "flotilla-system", o.LeaseNamespace)
	assert.Equal(t, ":8080", o.MetricsAddr)
	assert.Equal(t, ":8081", o.HealthAddr)
	assert.True(t, o.LeaderElect)
	assert.Equal(t, 3, o.Workers)
	assert.Equal(t, float32(30), o.QPS)
	assert.Equal(t, 50, o.Burst)
	assert.Equal(t, 15*time.Second, o.LeaseDuration)
	assert.Equal(t, 10*time.Second, o.RenewDeadline)
	assert.Equal(t, 2*time.Second, o.RetryPeriod)
	assert.Equal(t, 2*time.Minute, o.CacheSyncTimeout)
	assert.Equal(t, controller.DefaultQueueOptions(), o.Queue)
	require.NoError(t, o.Validate())

	t.Setenv("POD_NAMESPACE", "mine")
	assert.Equal(t, "mine", DefaultOptions("x").LeaseNamespace)
}

func TestLoggerLevels(t *testing.T) {
	for _, format := range []string{LogFormatJSON, LogFormatConsole} {
		var buf bytes.Buffer
		logger, z, err := NewLogger(&buf, format, 2)
		require.NoError(t, err)
		logger.V(2).Info("visible", "k", "v")
		logger.V(3).Info("hidden")
		logger.Error(errors.New("bad"), "an error")
		require.NoError(t, z.Sync())
		out := buf.String()
		assert.Contains(t, out, "visible", format)
		assert.NotContains(t, out, "hidden", format)
		assert.Contains(t, out, "an error", format)
		if format == LogFormatJSON {
			assert.Contains(t, out, `"k":"v"`)
			assert.Contains(t, out, `"v":2`)
		}
	}
	_, _, err := NewLogger(io.Discard, "xml", 0)
	assert.Error(t, err)
	_, _, err = NewLogger(io.Discard, LogFormatJSON, -1)
	assert.Error(t, err)
}

func TestRouteKlog(t *testing.T) {
	var buf syncBuffer
	logger, _, err := NewLogger(&buf, LogFormatJSON, 3)
	require.NoError(t, err)
	require.NoError(t, RouteKlog(logger, 3))
	defer klog.ClearLogger()
	klog.V(3).InfoS("from klog", "x", 1)
	klog.V(4).InfoS("too verbose")
	klog.FromContext(context.Background()).Info("contextual fallback")
	klog.Flush()
	out := buf.String()
	assert.Contains(t, out, "from klog")
	assert.Contains(t, out, "contextual fallback")
	assert.NotContains(t, out, "too verbose")
	assert.True(t, klog.V(3).Enabled())
	assert.False(t, klog.V(4).Enabled())
}

func TestHealthHandler(t *testing.T) {
	h := NewHealth()
	failing := atomic.Bool{}
	h.AddHealthz(Check{Name: "custom", Check: func(*http.Request) error {
		if failing.Load() {
			return errors.New("down")
		}
		return nil
	}})
	srv, err := StartServer(klog.Background(), "health", "127.0.0.1:0", h.Handler())
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Shutdown(time.Second)) }()
	base := "http://" + srv.Addr()

	code, body := get(t, base+"/readyz")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "[-]informer-sync failed")
	h.SetSynced(true)
	assert.True(t, h.Synced())
	code, body = get(t, base+"/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)
	code, body = get(t, base+"/readyz?verbose")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "[+]informer-sync ok")

	code, _ = get(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	failing.Store(true)
	code, body = get(t, base+"/healthz")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "[-]custom failed: down")
	code, _ = get(t, base+"/livez")
	assert.Equal(t, http.StatusInternalServerError, code)
}

func TestMetricsExposeWorkqueueAndRESTClient(t *testing.T) {
	m := NewMetrics()
	q := controller.NewQueue[string]("metrics-test", controller.DefaultQueueOptions(), controller.QueueConfig{MetricsProvider: m.QueueMetricsProvider()})
	loop := controller.NewLoop("metrics-test", q, func(context.Context, string) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = loop.Run(ctx, 1) }()
	q.Enqueue("a")
	q.Enqueue("b")
	require.Eventually(t, func() bool { return q.Len() == 0 }, 5*time.Second, time.Millisecond)
	cancel()
	<-done

	LatencyAdapter{m.restLatency}.Observe(context.Background(), "GET", mustURL("https://api:6443/api"), 20*time.Millisecond)
	ResultAdapter{m.restResult}.Increment(context.Background(), "200", "GET", "api:6443")

	srv, err := StartServer(klog.Background(), "metrics", "127.0.0.1:0", MetricsMux(m, func(mux *http.ServeMux) {
		mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "profiles") })
	}))
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Shutdown(time.Second)) }()
	code, body := get(t, "http://"+srv.Addr()+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`workqueue_adds_total{name="metrics-test"} 2`,
		`workqueue_depth{name="metrics-test"} 0`,
		`workqueue_work_duration_seconds_count{name="metrics-test"} 2`,
		`workqueue_queue_duration_seconds_count{name="metrics-test"} 2`,
		`workqueue_retries_total`,
		`workqueue_longest_running_processor_seconds{name="metrics-test"}`,
		`workqueue_unfinished_work_seconds{name="metrics-test"}`,
		`rest_client_request_duration_seconds_count{host="api:6443",verb="GET"} 1`,
		`rest_client_requests_total{code="200",host="api:6443",method="GET"} 1`,
		`go_goroutines`,
	} {
		assert.Contains(t, body, want)
	}
	code, _ = get(t, "http://"+srv.Addr()+"/debug/pprof/")
	assert.Equal(t, http.StatusOK, code)
}

func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	SetGCPercent("")
	assert.Equal(t, DefaultGCPercent, debug.SetGCPercent(100), "GOGC unset: the default")
	SetGCPercent("200") // the runtime read GOGC itself: nothing to do
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: left alone")
}

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

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func mustURL(s string) url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return *u
}

// runController counts its runs and stops when ctx is done.
type runController struct {
	started atomic.Bool
	workers atomic.Int32
}

func (c *runController) Name() string { return "counting" }
func (c *runController) Run(ctx context.Context, workers int) error {
	c.workers.Store(int32(workers))
	c.started.Store(true)
	<-ctx.Done()
	return nil
}

// kubeconfig writes a kubeconfig for a server nothing listens on: Run loads
// it, and a binary that registers no informer never dials it.
func kubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(p, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	return p
}

// Run (the node agent's shell) gives Setup the parsed options and REST
// configuration, waits for the registered sources before it starts the
// controllers and reports ready, and returns nil once ctx ends.
func TestRunStartsControllersAfterSync(t *testing.T) {
	var synced atomic.Bool
	c := &runController{}
	envs := make(chan *Env, 1)
	b := Binary{Name: "x-agent", Setup: func(_ context.Context, env *Env) error {
		env.AddSource(Source{Name: "gate", Start: func(context.Context) {}, HasSynced: synced.Load})
		env.AddController(c)
		envs <- env
		return nil
	}}
	health := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logs := &syncBuffer{}
	go func() {
		done <- Run(ctx, b, []string{"--kubeconfig=" + kubeconfig(t), "--leader-elect=false", "--workers=4",
			"--metrics-bind-address=0", "--health-probe-bind-address=" + health}, logs)
	}()
	env := <-envs
	assert.Equal(t, "x-agent", env.RESTConfig.UserAgent)
	assert.Equal(t, "https://127.0.0.1:1", env.RESTConfig.Host)
	status := func() int {
		resp, err := http.Get("http://" + health + "/readyz")
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return status() == http.StatusInternalServerError }, 5*time.Second, 10*time.Millisecond)
	assert.False(t, c.started.Load(), "controllers wait for the sources")
	synced.Store(true)
	require.Eventually(t, c.started.Load, 5*time.Second, time.Millisecond)
	assert.Equal(t, int32(4), c.workers.Load())
	require.Eventually(t, func() bool { return status() == http.StatusOK }, 5*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	assert.Contains(t, logs.String(), "Shut down cleanly")
}

// The shell has no leader election: asking for it is an error, not a
// binary that silently runs unelected.
func TestRunRefusesLeaderElection(t *testing.T) {
	err := Run(context.Background(), Binary{Name: "x-agent"}, []string{"--kubeconfig=" + kubeconfig(t)}, io.Discard)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "--leader-elect must be false"), err.Error())
}

func freePort(t *testing.T) string {
	t.Helper()
	srv, err := StartServer(klog.Background(), "probe", "127.0.0.1:0", http.NewServeMux())
	require.NoError(t, err)
	addr := srv.Addr()
	require.NoError(t, srv.Shutdown(time.Second))
	return addr
}

// The shell must stay free of client-go's clientset: the node agent runs on
// it, and the clientset's start-up registration of every API group alone
// costs more memory than the agent may use (issue 28).
func TestNoClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "k8s.io/client-go/kubernetes", strings.HasPrefix(dep, "k8s.io/client-go/kubernetes/"),
			strings.HasPrefix(dep, "k8s.io/client-go/informers"), strings.HasPrefix(dep, "k8s.io/client-go/tools/leaderelection"):
			t.Errorf("kit/app/shell links %s: the node agent would pay for every API group", dep)
		}
	}
}

// --pprof on a binary without profiling endpoints (the node agent) is an
// error, not a flag silently ignored.
func TestServeRefusesPProfWithoutEndpoints(t *testing.T) {
	o := DefaultOptions("x")
	o.MetricsAddr, o.HealthAddr, o.PProf = "0", "0", true
	_, err := Serve(klog.Background(), o, NewMetrics(), NewHealth(), nil)
	require.ErrorContains(t, err, "--pprof")
	o.PProf = false
	srv, err := Serve(klog.Background(), o, NewMetrics(), NewHealth(), nil)
	require.NoError(t, err)
	srv.Close()
}
