package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// ClientAuth authenticates the callers of the webhook server: the API
// server presents a client certificate (configured in its
// AdmissionConfiguration, kubeConfigFile per webhook host) signed by CAFile,
// whose subject common name or a DNS name is one of Names. Anyone else who
// reaches the port — any pod, with a forged AdmissionReview naming another
// tenant's pods and budgets — fails the TLS handshake before a handler
// runs.
type ClientAuth struct {
	// CAFile is a PEM bundle of the CAs that sign the API server's client
	// certificate. Re-read when it changes (checked at most every
	// reloadEvery), so a rotated CA needs no restart.
	CAFile string
	// Names, when not empty, are the accepted client identities (subject
	// CN or a DNS SAN). A CA that also signs other clients' certificates
	// (the cluster CA signs every kubelet's) needs this.
	Names []string

	mu      sync.Mutex
	pool    *x509.CertPool
	modTime time.Time
	size    int64
	checked time.Time
}

const reloadEvery = 10 * time.Second

// Load reads the CA file; an error at start is the operator's to fix.
func (a *ClientAuth) Load() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reload(time.Now(), true)
}

// reload re-reads the CA file when its size or modification time changed.
// Called with a.mu held.
func (a *ClientAuth) reload(now time.Time, force bool) error {
	if !force && now.Sub(a.checked) < reloadEvery {
		return nil
	}
	a.checked = now
	fi, err := os.Stat(a.CAFile)
	if err != nil {
		return fmt.Errorf("webhook client CA: %w", err)
	}
	if !force && a.pool != nil && fi.ModTime().Equal(a.modTime) && fi.Size() == a.size {
		return nil
	}
	pem, err := os.ReadFile(a.CAFile)
	if err != nil {
		return fmt.Errorf("webhook client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("webhook client CA %s: no PEM certificate", a.CAFile)
	}
	a.pool, a.modTime, a.size = pool, fi.ModTime(), fi.Size()
	return nil
}

// CAs returns the current pool (re-read if the file changed; on a read
// error the last good pool is kept: a half-written file must not lock the
// API server out).
func (a *ClientAuth) CAs() *x509.CertPool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_ = a.reload(time.Now(), false)
	return a.pool
}

// verifyName checks the verified leaf against Names.
func (a *ClientAuth) verifyName(cs tls.ConnectionState) error {
	if len(a.Names) == 0 {
		return nil
	}
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return errors.New("webhook client certificate not verified")
	}
	leaf := cs.VerifiedChains[0][0]
	if slices.Contains(a.Names, leaf.Subject.CommonName) {
		return nil
	}
	for _, n := range leaf.DNSNames {
		if slices.Contains(a.Names, n) {
			return nil
		}
	}
	return fmt.Errorf("webhook client %q is not one of the accepted callers %v", leaf.Subject.CommonName, a.Names)
}

// tlsConfig is the server's TLS configuration: with auth, a client
// certificate is required and verified against auth's CAs (per handshake,
// so a rotated CA file is used without restart) and names.
//
// With optional (the server also serves CRD conversion) a handshake
// without a certificate is accepted, because the API server presents none
// to conversion webhooks (its AdmissionConfiguration's kubeConfigFile is
// for the admission plugins only; kit/webhook/integration
// TestConversionCallerPresentsNoClientCertificate): one that presents a
// certificate must still pass both checks, and the admission paths refuse
// a request without one (requireClientCert) before a handler runs.
func tlsConfig(certs CertSource, auth *ClientAuth, optional bool) *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
	if auth == nil {
		return base
	}
	base.ClientAuth = tls.RequireAndVerifyClientCert
	base.VerifyConnection = auth.verifyName
	if optional {
		base.ClientAuth = tls.VerifyClientCertIfGiven
		base.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return nil
			}
			return auth.verifyName(cs)
		}
	}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		c.GetConfigForClient = nil
		c.ClientCAs = auth.CAs()
		return c, nil
	}
	return base
}

// requireClientCert wraps an admission handler of a server whose handshake
// accepts callers without a certificate (tlsConfig optional): such a
// request is refused with 403 before the handler runs. A certificate that
// was presented has been verified (CA and names) in the handshake.
func requireClientCert(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "admission webhooks require the API server's client certificate", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// httpErrorLog routes net/http's server errors (a refused TLS handshake:
// "tls: certificate required", a caller too slow for the timeouts) into the
// structured log instead of the standard logger's stderr.
type httpErrorLog struct{ logger klog.Logger }

func (w httpErrorLog) Write(p []byte) (int, error) {
	w.logger.Info("Webhook server connection error", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}

func newHTTPErrorLog(logger klog.Logger) *log.Logger { return log.New(httpErrorLog{logger}, "", 0) }
