package shell

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// Metrics is the Prometheus registry a binary serves on /metrics. It is built
// on prometheus/client_golang directly (not component-base's legacyregistry),
// so each Metrics is an independent registry that tests can create freely.
// The metric names match the ones kube-controller-manager exports
// (workqueue_*, rest_client_*, leader_election_master_status), so existing
// dashboards work.
type Metrics struct {
	// Registry holds every collector; controllers register their own
	// metrics on it through Env.Metrics.
	Registry *prometheus.Registry

	queue *queueMetricsProvider

	restLatency     *prometheus.HistogramVec
	restRateLimiter *prometheus.HistogramVec
	restResult      *prometheus.CounterVec
	// Leader is the leader_election_master_status gauge; kit/app points
	// client-go's leader-election metric hook at it (this package does not
	// link leader election: the node agent has none).
	Leader *prometheus.GaugeVec
}

// NewMetrics creates a registry with the Go runtime and process collectors,
// the workqueue metrics, the REST client metrics and the leader-election
// status gauge.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{Registry: reg, queue: newQueueMetricsProvider()}
	m.restLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Request latency in seconds. Broken down by verb and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
	}, []string{"verb", "host"})
	m.restRateLimiter = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Client side rate limiter latency in seconds. Broken down by verb and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
	}, []string{"verb", "host"})
	m.restResult = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "Number of HTTP requests, partitioned by status code, method, and host.",
	}, []string{"code", "method", "host"})
	m.Leader = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
	}, []string{"name"})
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.restLatency, m.restRateLimiter, m.restResult, m.Leader,
	)
	m.queue.register(reg)
	return m
}

// QueueMetricsProvider returns the workqueue.MetricsProvider bound to this
// registry. Pass it to queues explicitly (kit/controller.QueueConfig).
func (m *Metrics) QueueMetricsProvider() workqueue.MetricsProvider { return m.queue }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// InstallClientGoProviders points client-go's process-global metric hooks
// (REST client, workqueue default provider) at this registry. client-go accepts only the first call per process, so Main calls
// this once; tests use the providers directly instead.
func (m *Metrics) InstallClientGoProviders() {
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestLatency:     LatencyAdapter{m.restLatency},
		RateLimiterLatency: LatencyAdapter{m.restRateLimiter},
		RequestResult:      ResultAdapter{m.restResult},
	})
	workqueue.SetProvider(m.queue)
}

// LatencyAdapter and ResultAdapter feed client-go's REST metrics hooks.
type LatencyAdapter struct{ v *prometheus.HistogramVec }

func (a LatencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.v.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type ResultAdapter struct{ v *prometheus.CounterVec }

func (a ResultAdapter) Increment(_ context.Context, code, method, host string) {
	a.v.WithLabelValues(code, method, host).Inc()
}

// queueMetricsProvider implements workqueue.MetricsProvider with the same
// metric names as k8s.io/component-base/metrics/prometheus/workqueue.
type queueMetricsProvider struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, workDuration      *prometheus.HistogramVec
}

func newQueueMetricsProvider() *queueMetricsProvider {
	const sub = "workqueue"
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	return &queueMetricsProvider{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "depth",
			Help: "Current depth of workqueue"}, []string{"name"}),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "adds_total",
			Help: "Total number of adds handled by workqueue"}, []string{"name"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: sub, Name: "queue_duration_seconds",
			Help: "How long in seconds an item stays in workqueue before being requested.", Buckets: buckets}, []string{"name"}),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: sub, Name: "work_duration_seconds",
			Help: "How long in seconds processing an item from workqueue takes.", Buckets: buckets}, []string{"name"}),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "unfinished_work_seconds",
			Help: "How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."}, []string{"name"}),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "longest_running_processor_seconds",
			Help: "How many seconds has the longest running processor for workqueue been running."}, []string{"name"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "retries_total",
			Help: "Total number of retries handled by workqueue"}, []string{"name"}),
	}
}

func (p *queueMetricsProvider) register(reg prometheus.Registerer) {
	reg.MustRegister(p.depth, p.adds, p.latency, p.workDuration, p.unfinished, p.longest, p.retries)
}

func (p *queueMetricsProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name)
}
func (p *queueMetricsProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name)
}
func (p *queueMetricsProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name)
}
func (p *queueMetricsProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.workDuration.WithLabelValues(name)
}
func (p *queueMetricsProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name)
}
func (p *queueMetricsProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longest.WithLabelValues(name)
}
func (p *queueMetricsProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name)
}

// Counter is a counter a reconciler reads from its own state when scraped.
type Counter struct {
	Name, Help string
	Value      func() float64
}

// RegisterCounters registers each counter on reg as a CounterFunc.
func RegisterCounters(reg prometheus.Registerer, counters ...Counter) error {
	for _, c := range counters {
		col := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.Name, Help: c.Help}, c.Value)
		if err := reg.Register(col); err != nil {
			return fmt.Errorf("register %s: %w", c.Name, err)
		}
	}
	return nil
}
