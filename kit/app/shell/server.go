package shell

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// Check is one named health or readiness check.
type Check struct {
	Name  string
	Check func(*http.Request) error
}

// Health serves /healthz and /readyz.
//
// /healthz passes while the process is alive and, when leader election is
// on, while the leader-election watchdog is happy (a leader whose Lease
// expired without it noticing fails the check, so the kubelet restarts it).
// /readyz passes once every informer the binary registered has synced; in a
// binary with replica components (webhooks), once the replica informers
// synced and every component is ready, on the leader and standbys alike.
// Append ?verbose to see each check.
type Health struct {
	healthz []Check
	mu      sync.Mutex
	readyz  []Check
	synced  atomic.Bool
}

// NewHealth returns a Health with the "ping" liveness check and the
// "informer-sync" readiness check.
func NewHealth() *Health {
	h := &Health{}
	ping := Check{Name: "ping", Check: func(*http.Request) error { return nil }}
	h.healthz = []Check{ping}
	h.readyz = []Check{ping, {Name: "informer-sync", Check: func(*http.Request) error {
		if !h.synced.Load() {
			return errors.New("informer caches have not synced yet")
		}
		return nil
	}}}
	return h
}

// AddHealthz adds a liveness check.
func (h *Health) AddHealthz(c Check) { h.healthz = append(h.healthz, c) }

// AddReadyz adds a readiness check.
func (h *Health) AddReadyz(c Check) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readyz = append(h.readyz, c)
}

// ReplaceReadyz replaces the readiness check named name by checks.
func (h *Health) ReplaceReadyz(name string, checks []Check) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Check, 0, len(h.readyz)+len(checks))
	for _, c := range h.readyz {
		if c.Name == name {
			out = append(out, checks...)
			continue
		}
		out = append(out, c)
	}
	h.readyz = out
}

func (h *Health) readyChecks() []Check {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Check(nil), h.readyz...)
}

// SetSynced flips the informer-sync readiness check.
func (h *Health) SetSynced(v bool) { h.synced.Store(v) }

// Synced reports the informer-sync state.
func (h *Health) Synced() bool { return h.synced.Load() }

// Handler returns a mux with /healthz, /livez (alias) and /readyz.
func (h *Health) Handler() http.Handler {
	mux := http.NewServeMux()
	healthz := func() []Check { return h.healthz }
	mux.Handle("/healthz", checksHandler("healthz", healthz))
	mux.Handle("/livez", checksHandler("livez", healthz))
	mux.Handle("/readyz", checksHandler("readyz", h.readyChecks))
	return mux
}

func checksHandler(name string, list func() []Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		checks := list()
		var b strings.Builder
		failed := false
		for _, c := range checks {
			if err := c.Check(r); err != nil {
				failed = true
				fmt.Fprintf(&b, "[-]%s failed: %v\n", c.Name, err)
			} else {
				fmt.Fprintf(&b, "[+]%s ok\n", c.Name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if failed {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%s%s check failed\n", b.String(), name)
			return
		}
		if _, verbose := r.URL.Query()["verbose"]; verbose {
			fmt.Fprintf(w, "%s%s check passed\n", b.String(), name)
			return
		}
		fmt.Fprint(w, "ok")
	})
}

// MetricsMux serves /metrics and what pprof (nil: nothing) registers:
// kit/app's /debug/pprof/. This package does not link net/http/pprof: a
// binary without it (the node agent) runs with the runtime's memory
// profiling off, which saves it the profiler's tables.
func MetricsMux(m *Metrics, pprof func(*http.ServeMux)) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	if pprof != nil {
		pprof(mux)
	}
	return mux
}

// Server is a started HTTP server.
type Server struct {
	name string
	addr net.Addr
	srv  *http.Server
	done chan error
}

// StartServer listens on addr and serves h in the background. addr "0" or
// "" returns nil (disabled).
func StartServer(logger logr.Logger, name, addr string, h http.Handler) (*Server, error) {
	if addr == "" || addr == "0" {
		logger.Info("Server disabled", "server", name)
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	s := &Server{
		name: name,
		addr: ln.Addr(),
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan error, 1),
	}
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	logger.Info("Serving", "server", name, "address", s.addr.String())
	return s, nil
}

// Addr returns the bound address (useful with port 0).
func (s *Server) Addr() string {
	if s == nil {
		return ""
	}
	return s.addr.String()
}

// Shutdown stops the server, waiting at most timeout for open requests.
func (s *Server) Shutdown(timeout time.Duration) error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("%s server shutdown: %w", s.name, err)
	}
	return <-s.done
}
