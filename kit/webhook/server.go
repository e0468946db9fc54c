package webhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// maxRequestBytes bounds an AdmissionReview body: the API server's own
// request limit is 3 MiB per object, twice for UPDATE (object + old object).
const maxRequestBytes = 7 << 20

// CertSource provides the serving certificate of a Server.
type CertSource interface {
	// GetCertificate is tls.Config.GetCertificate: called per handshake, so a
	// renewed certificate is served without a restart.
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// Metrics are the webhook server's collectors. Register them once per
// registry (NewMetrics does) and share them between servers of a binary.
type Metrics struct {
	latency  *prometheus.HistogramVec
	requests *prometheus.CounterVec
}

// NewMetrics registers the webhook metrics on reg (the binary's /metrics
// registry, kit/app Env.Metrics):
//
//	webhook_request_duration_seconds{webhook}   histogram of handling time
//	webhook_requests_total{webhook,result}      result: allowed, denied, error;
//	                                            conversion: converted, failed, error
//
// webhook is the name a handler was registered with.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "webhook_request_duration_seconds",
			Help:    "Time a webhook took to answer, by webhook (handler name).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"webhook"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhook_requests_total",
			Help: "Webhook requests answered, by webhook (handler name) and result (admission: allowed, denied, error; conversion: converted, failed, error).",
		}, []string{"webhook", "result"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.latency, m.requests} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register webhook metrics: %w", err)
			}
		}
	}
	return m, nil
}

// ServerOptions configure a Server.
type ServerOptions struct {
	// BindAddress is host:port to listen on, e.g. ":9443" or
	// "127.0.0.1:9443"; port 0 picks a free port (see Addr).
	BindAddress string
	// Clock times requests (tests inject a fake one).
	Clock clock.PassiveClock
	// ShutdownDelay keeps serving this long after shutdown was asked for
	// (reporting not ready meanwhile): the API server still sends requests
	// to a terminating replica until it has seen its endpoint go, and with
	// failurePolicy Fail a refused connection rejects the object.
	ShutdownDelay time.Duration
	// ClientAuth, when set, admits only callers presenting a client
	// certificate it accepts (the API server); nil admits any caller that
	// reaches the port.
	ClientAuth *ClientAuth
	// ReadTimeout, WriteTimeout and IdleTimeout override the defaults
	// below (tests).
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConversionBytes bounds a ConversionReview body (default
	// DefaultMaxConversionBytes).
	MaxConversionBytes int64
}

// Server timeouts. The API server waits at most 30 s for a webhook
// (timeoutSeconds ≤ 30), so no legitimate request needs longer; the bounds
// keep a caller that sends or reads slowly from holding connections and
// goroutines forever.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second // the whole request, body included
	writeTimeout      = 40 * time.Second // from the end of the headers to the end of the answer
	idleTimeout       = 90 * time.Second // a kept-alive connection between requests (the API server reuses them)
)

// Server is an AdmissionReview v1 server: one Handler per path.
type Server struct {
	opts    ServerOptions
	certs   CertSource
	metrics *Metrics
	mux     *http.ServeMux

	mu    sync.Mutex
	paths map[string]string // path → webhook name
	// conversion: a conversion path is registered, so a caller without a
	// client certificate (the API server calling it) passes the handshake.
	conversion bool
	addr       net.Addr
	serving    atomic.Bool
	listener   net.Listener
	// admissionOpen, when set, holds the admission paths (HoldAdmissionUntil).
	admissionOpen atomic.Pointer[func() bool]
}

// NewServer returns a server presenting certs' certificate.
func NewServer(opts ServerOptions, certs CertSource, metrics *Metrics) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&opts.ReadTimeout, readTimeout}, {&opts.WriteTimeout, writeTimeout}, {&opts.IdleTimeout, idleTimeout}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if metrics == nil {
		metrics, _ = NewMetrics(nil)
	}
	return &Server{opts: opts, certs: certs, metrics: metrics, mux: http.NewServeMux(), paths: map[string]string{}}
}

// Register serves h on path under name (the metrics' webhook label, e.g.
// "sidecarset-inject-pod"). Register before Run.
func (s *Server) Register(path, name string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimPath(path, name)
	var handler http.Handler = &reviewHandler{name: name, h: h, metrics: s.metrics, clock: s.opts.Clock}
	handler = s.heldUntilOpen(handler)
	if s.opts.ClientAuth != nil {
		handler = requireClientCert(handler)
	}
	s.mux.Handle(path, handler)
}

// Paths returns the registered paths and their names.
func (s *Server) Paths() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.paths))
	for p, n := range s.paths {
		out[p] = n
	}
	return out
}

// ServeHTTP serves the registered handlers (without TLS; tests).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Listen binds the address; Run then serves on it. Separate so that callers
// know the port before serving (port 0).
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	s.listener, s.addr = ln, ln.Addr()
	return nil
}

// Addr is the bound address once Listen returned.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr == nil {
		return ""
	}
	return s.addr.String()
}

// Run serves TLS until ctx is done, then shuts down gracefully (in-flight
// reviews finish). It listens first if Listen was not called.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("server", "webhook")
	if a := s.opts.ClientAuth; a != nil {
		if err := a.Load(); err != nil {
			return err
		}
		logger.Info("Admission webhook callers must present a client certificate", "clientCA", a.CAFile, "names", a.Names)
	} else {
		logger.Info("Admission webhook callers are not authenticated (no --webhook-client-ca): anyone reaching the port can send reviews")
	}
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		TLSConfig:         tlsConfig(s.certs, s.opts.ClientAuth, s.servesConversion()),
		// A refused handshake is an expected event (a forged review), not
		// server noise: logged at V(2) through klog.
		ErrorLog: newHTTPErrorLog(logger),
		// Requests in flight during the drain finish with their own context.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(s.listener, "", "") }()
	s.serving.Store(true)
	logger.Info("Serving admission webhooks", "address", s.Addr(), "paths", s.Paths())
	select {
	case err := <-done:
		s.serving.Store(false)
		return fmt.Errorf("webhook server: %w", err)
	case <-ctx.Done():
	}
	s.serving.Store(false)
	if s.opts.ShutdownDelay > 0 {
		logger.Info("Draining: still serving admission webhooks before shutting down", "delay", s.opts.ShutdownDelay)
		select {
		case err := <-done:
			return fmt.Errorf("webhook server: %w", err)
		case <-time.After(s.opts.ShutdownDelay):
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("webhook server shutdown: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}

func (s *Server) servesConversion() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conversion
}

// HoldAdmissionUntil makes the admission paths answer 503 (a failed call:
// the configuration's failurePolicy decides) until open reports true, while
// conversion is served at once. A server started before its informers
// synced (it converts the versions they read) must not admit from empty
// caches; behind a Service only Ready replicas are called anyway, but a
// configuration by URL (make run) reaches the process directly.
func (s *Server) HoldAdmissionUntil(open func() bool) { s.admissionOpen.Store(&open) }

func (s *Server) heldUntilOpen(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open := s.admissionOpen.Load(); open != nil && !(*open)() {
			http.Error(w, "webhook caches are still syncing", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Ready is the "webhook serving" readiness check.
func (s *Server) Ready() error {
	if !s.serving.Load() {
		return errors.New("webhook server not serving yet")
	}
	return nil
}

// reviewHandler decodes an AdmissionReview, calls the handler and encodes
// the answer, recording metrics.
type reviewHandler struct {
	name    string
	h       Handler
	metrics *Metrics
	clock   clock.PassiveClock
}

func (rh *reviewHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := rh.clock.Now()
	ctx := r.Context()
	logger := klog.FromContext(ctx).WithValues("webhook", rh.name)
	review, resp := rh.review(ctx, r)
	rh.metrics.requests.WithLabelValues(rh.name, resp.result()).Inc()
	rh.metrics.latency.WithLabelValues(rh.name).Observe(rh.clock.Since(start).Seconds())

	out := &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: &admissionv1.AdmissionResponse{
			UID:      review.uid(),
			Allowed:  resp.Allowed,
			Result:   resp.Result,
			Warnings: resp.Warnings,
		},
	}
	if len(resp.Patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		out.Response.Patch, out.Response.PatchType = resp.Patch, &pt
	}
	if resp.errored {
		logger.Error(nil, "Admission request failed", "uid", review.uid(), "message", resp.Result.Message)
	} else if v := logger.V(4); v.Enabled() {
		v.Info("Admission request answered", "uid", review.uid(), "allowed", resp.Allowed, "patched", len(resp.Patch) > 0)
	}
	if resp.errored && resp.Result.Code >= http.StatusInternalServerError {
		// Our own failure: not an answer, so that failurePolicy decides (Errored).
		http.Error(w, resp.Result.Message, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		logger.Error(err, "Cannot write admission response")
	}
}

type decodedReview struct{ req *admissionv1.AdmissionRequest }

func (d decodedReview) uid() types.UID {
	if d.req == nil {
		return uuid.NewUUID()
	}
	return d.req.UID
}

func (rh *reviewHandler) review(ctx context.Context, r *http.Request) (d decodedReview, resp Response) {
	if r.Method != http.MethodPost {
		return d, Errored(http.StatusBadRequest, fmt.Errorf("admission reviews are POSTed, got %s", r.Method))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	if err != nil {
		return d, Errored(http.StatusBadRequest, fmt.Errorf("read admission review: %w", err))
	}
	if len(body) > maxRequestBytes {
		return d, Errored(http.StatusRequestEntityTooLarge, fmt.Errorf("admission review larger than %d bytes", maxRequestBytes))
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return d, Errored(http.StatusBadRequest, fmt.Errorf("decode admission review: %w", err))
	}
	if review.Request == nil {
		return d, Errored(http.StatusBadRequest, errors.New("admission review without a request"))
	}
	d.req = review.Request
	defer func() {
		// A panicking handler answers 500 instead of killing the replica.
		if p := recover(); p != nil {
			resp = Errored(http.StatusInternalServerError, fmt.Errorf("webhook %s panicked: %v", rh.name, p))
		}
	}()
	logger := klog.FromContext(ctx).WithValues("webhook", rh.name, "uid", review.Request.UID,
		"operation", review.Request.Operation, "resource", review.Request.Resource.Resource,
		"namespace", review.Request.Namespace, "name", review.Request.Name)
	return d, rh.h.Handle(klog.NewContext(ctx, logger), Request{AdmissionRequest: *review.Request})
}

// claimPath records path as name's (under s.mu); registering a path twice
// is a programming error.
func (s *Server) claimPath(path, name string) {
	if _, dup := s.paths[path]; dup {
		panic(fmt.Sprintf("webhook path %s registered twice", path))
	}
	s.paths[path] = name
}
