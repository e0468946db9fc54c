package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// loaded is a parsed certificate and the CA bundle that trusts it.
type loaded struct {
	cert   *tls.Certificate
	bundle []byte
}

// certHolder serves the latest loaded certificate.
type certHolder struct{ current atomic.Pointer[loaded] }

func (h *certHolder) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	l := h.current.Load()
	if l == nil {
		return nil, errors.New("no serving certificate loaded yet")
	}
	return l.cert, nil
}

// CABundle is the PEM bundle to trust the served certificate; nil when
// unknown (external certificates without ca.crt).
func (h *certHolder) CABundle() []byte {
	if l := h.current.Load(); l != nil {
		return l.bundle
	}
	return nil
}

func (h *certHolder) load(certPEM, keyPEM, bundle []byte) error {
	if l := h.current.Load(); l != nil && bytes.Equal(l.bundle, bundle) && l.cert != nil &&
		bytes.Equal(l.cert.Leaf.Raw, firstDER(certPEM)) {
		return nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("load serving certificate: %w", err)
	}
	h.current.Store(&loaded{cert: &pair, bundle: bundle})
	return nil
}

// reload loads a certificate as load does, then calls onChange (when set)
// if the CA bundle changed.
func (h *certHolder) reload(certPEM, keyPEM, bundle []byte, onChange func()) error {
	before := h.CABundle()
	if err := h.load(certPEM, keyPEM, bundle); err != nil {
		return err
	}
	if onChange != nil && !bytes.Equal(before, h.CABundle()) {
		onChange()
	}
	return nil
}

func firstDER(certPEM []byte) []byte {
	certs, err := parseCerts(certPEM)
	if err != nil || len(certs) == 0 {
		return nil
	}
	return certs[0].Raw
}

// SecretCerts keeps the webhook's CA and serving certificate in one Secret
// shared by every replica: the first replica to find none creates it, the
// others read it (create-or-get, AlreadyExists answered by reading); whoever
// finds it due for renewal updates it with its resourceVersion (a Conflict
// means another replica did: read again). Every replica re-reads the Secret
// every Interval and serves what it holds, so a renewal reaches all of them.
type SecretCerts struct {
	certHolder
	client    kubernetes.Interface
	namespace string
	name      string
	policy    CertPolicy
	clock     clock.PassiveClock
	// Interval between re-reads (default 1m).
	Interval time.Duration
	// OnChange is called after a new bundle was loaded (the CA injector's
	// trigger).
	OnChange func()
}

// NewSecretCerts manages Secret namespace/name under policy.
func NewSecretCerts(client kubernetes.Interface, namespace, name string, policy CertPolicy, clk clock.PassiveClock) *SecretCerts {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &SecretCerts{client: client, namespace: namespace, name: name, policy: policy, clock: clk, Interval: time.Minute}
}

// Ensure reads the Secret, creates or renews it when needed, and loads it.
func (s *SecretCerts) Ensure(ctx context.Context) error {
	secrets := s.client.CoreV1().Secrets(s.namespace)
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			return fmt.Errorf("certificate secret %s/%s: gave up after repeated conflicts", s.namespace, s.name)
		}
		cur, err := secrets.Get(ctx, s.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			data, _, err := PlanCerts(s.clock.Now(), nil, s.policy)
			if err != nil {
				return err
			}
			sec := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name,
					Labels: map[string]string{"app.kubernetes.io/part-of": "flotilla"}},
				Type: corev1.SecretTypeTLS,
				Data: data,
			}
			created, err := secrets.Create(ctx, sec, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue // another replica created it first: use theirs
			}
			if err != nil {
				return fmt.Errorf("create certificate secret %s/%s: %w", s.namespace, s.name, err)
			}
			klog.FromContext(ctx).Info("Created webhook certificate secret", "secret", klog.KObj(created))
			return s.loadSecret(created)
		}
		if err != nil {
			return fmt.Errorf("get certificate secret %s/%s: %w", s.namespace, s.name, err)
		}
		data, changed, err := PlanCerts(s.clock.Now(), cur.Data, s.policy)
		if err != nil {
			return err
		}
		if !changed {
			return s.loadSecret(cur)
		}
		upd := cur.DeepCopy()
		upd.Data = data
		updated, err := secrets.Update(ctx, upd, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue // another replica renewed it: judge theirs
		}
		if err != nil {
			return fmt.Errorf("renew certificate secret %s/%s: %w", s.namespace, s.name, err)
		}
		klog.FromContext(ctx).Info("Renewed webhook certificates", "secret", klog.KObj(updated))
		return s.loadSecret(updated)
	}
}

func (s *SecretCerts) loadSecret(sec *corev1.Secret) error {
	if err := s.reload(sec.Data[KeyTLSCert], sec.Data[KeyTLSKey], sec.Data[KeyCACert], s.OnChange); err != nil {
		return fmt.Errorf("secret %s/%s: %w", s.namespace, s.name, err)
	}
	return nil
}

// Run re-reads (and renews) the Secret every Interval until ctx is done;
// errors are logged and retried at the next tick.
func (s *SecretCerts) Run(ctx context.Context) { ensureEvery(ctx, s.Interval, s.Ensure) }

// FileCerts serves certificates provided as files (cert-manager, a mounted
// Secret): tls.crt and tls.key in Dir, and ca.crt if present (the bundle to
// inject; cert-manager's CA injector can do that instead). Files are re-read
// every Interval, so a renewed certificate is served without a restart.
type FileCerts struct {
	certHolder
	Dir      string
	Interval time.Duration
	OnChange func()
}

// NewFileCerts reads certificates from dir.
func NewFileCerts(dir string) *FileCerts { return &FileCerts{Dir: dir, Interval: 10 * time.Second} }

// Ensure (re)loads the files.
func (f *FileCerts) Ensure(context.Context) error {
	certPEM, err := os.ReadFile(filepath.Join(f.Dir, KeyTLSCert))
	if err != nil {
		return fmt.Errorf("webhook certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(f.Dir, KeyTLSKey))
	if err != nil {
		return fmt.Errorf("webhook key: %w", err)
	}
	bundle, err := os.ReadFile(filepath.Join(f.Dir, KeyCACert))
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("webhook CA: %w", err)
	}
	if err := f.reload(certPEM, keyPEM, bundle, f.OnChange); err != nil {
		return fmt.Errorf("%s: %w", f.Dir, err)
	}
	return nil
}

// Run reloads the files every Interval until ctx is done.
func (f *FileCerts) Run(ctx context.Context) { ensureEvery(ctx, f.Interval, f.Ensure) }

// ensureEvery calls ensure every interval until ctx is done; errors are
// logged and retried at the next tick.
func ensureEvery(ctx context.Context, interval time.Duration, ensure func(context.Context) error) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := ensure(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Webhook certificates")
		}
	}, interval)
}
