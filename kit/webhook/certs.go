package webhook

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"slices"
	"time"
)

// Secret data keys: those of a kubernetes.io/tls Secret plus the CA (the
// bundle: the current CA first, then older ones still valid, so certificates
// signed by a CA being rotated out stay trusted) and the current CA's key.
const (
	KeyCACert  = "ca.crt"
	KeyCAKey   = "ca.key"
	KeyTLSCert = "tls.crt"
	KeyTLSKey  = "tls.key"
)

// CertPolicy says what the serving certificate must cover and how long
// certificates live.
type CertPolicy struct {
	// DNSNames and IPs the serving certificate must cover, e.g. the
	// Service's <svc>.<ns>.svc names, or 127.0.0.1 for a local process.
	DNSNames []string
	IPs      []net.IP
	// CAValidity and CertValidity are the certificates' lifetimes
	// (defaults 10 years and 1 year).
	CAValidity   time.Duration
	CertValidity time.Duration
	// RenewFraction: a certificate is renewed once less than this fraction
	// of its lifetime remains (default 1/3), so every replica, reloading
	// every few minutes, serves the new one long before the old expires.
	RenewFraction float64
}

func (p CertPolicy) withDefaults() CertPolicy {
	if p.CAValidity <= 0 {
		p.CAValidity = 10 * 365 * 24 * time.Hour
	}
	if p.CertValidity <= 0 {
		p.CertValidity = 365 * 24 * time.Hour
	}
	if p.RenewFraction <= 0 || p.RenewFraction >= 1 {
		p.RenewFraction = 1.0 / 3
	}
	return p
}

// CertData is the content of the certificate Secret.
type CertData map[string][]byte

// PlanCerts decides the certificate Secret's content at now: data unchanged
// (changed=false) when its certificates are valid, cover the policy's names
// and are not due for renewal; otherwise what to write. A CA due for
// renewal is replaced and kept in the bundle until it expires; the serving
// certificate is re-issued by the current CA.
func PlanCerts(now time.Time, data CertData, p CertPolicy) (CertData, bool, error) {
	p = p.withDefaults()
	caCert, caKey, bundle := parseCA(data)
	changed := false
	if caCert == nil || dueForRenewal(now, caCert, p.RenewFraction) || caCert.NotAfter.Before(now.Add(p.CertValidity)) {
		var err error
		newCert, newKey, err := newCA(now, p.CAValidity)
		if err != nil {
			return nil, false, err
		}
		bundle = append([]*x509.Certificate{newCert}, bundle...)
		caCert, caKey, changed = newCert, newKey, true
	}
	// Drop expired CAs from the bundle.
	bundle = slices.DeleteFunc(bundle, func(c *x509.Certificate) bool { return !now.Before(c.NotAfter) })

	out := CertData{KeyCACert: encodeCerts(bundle), KeyCAKey: data[KeyCAKey], KeyTLSCert: data[KeyTLSCert], KeyTLSKey: data[KeyTLSKey]}
	if changed {
		keyPEM, err := encodeKey(caKey)
		if err != nil {
			return nil, false, err
		}
		out[KeyCAKey] = keyPEM
	}
	if changed || servingNeedsRenewal(now, data, caCert, p) {
		certPEM, keyPEM, err := newServingCert(now, caCert, caKey, p)
		if err != nil {
			return nil, false, err
		}
		out[KeyTLSCert], out[KeyTLSKey] = certPEM, keyPEM
		changed = true
	}
	if !bytes.Equal(out[KeyCACert], data[KeyCACert]) {
		changed = true
	}
	if !changed {
		return data, false, nil
	}
	return out, true, nil
}

func dueForRenewal(now time.Time, c *x509.Certificate, fraction float64) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotAfter.Sub(now) < time.Duration(float64(life)*fraction)
}

// parseCA returns the current CA (first of the bundle) with its key, and
// the whole bundle; nils when missing or unusable.
func parseCA(data CertData) (*x509.Certificate, crypto.Signer, []*x509.Certificate) {
	bundle, err := parseCerts(data[KeyCACert])
	if err != nil || len(bundle) == 0 {
		return nil, nil, nil
	}
	key, err := parseKey(data[KeyCAKey])
	if err != nil || !publicKeysEqual(bundle[0].PublicKey, key.Public()) {
		return nil, nil, nil
	}
	return bundle[0], key, bundle
}

func servingNeedsRenewal(now time.Time, data CertData, ca *x509.Certificate, p CertPolicy) bool {
	pair, err := tls.X509KeyPair(data[KeyTLSCert], data[KeyTLSKey])
	if err != nil {
		return true
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || cert.CheckSignatureFrom(ca) != nil {
		return true
	}
	if now.Before(cert.NotBefore) || dueForRenewal(now, cert, p.RenewFraction) {
		return true
	}
	for _, n := range p.DNSNames {
		if !slices.Contains(cert.DNSNames, n) {
			return true
		}
	}
	for _, ip := range p.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return true
		}
	}
	return false
}

func newCA(now time.Time, validity time.Duration) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	sn, err := serial(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("flotilla-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-time.Hour), // tolerate clock skew between replicas and the API server
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func newServingCert(now time.Time, ca *x509.Certificate, caKey crypto.Signer, p CertPolicy) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate serving key: %w", err)
	}
	cn := "flotilla-webhook"
	if len(p.DNSNames) > 0 {
		cn = p.DNSNames[0]
	}
	notAfter := now.Add(p.CertValidity)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	sn, err := serial(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("serving certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     p.DNSNames,
		IPAddresses:  p.IPs,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create serving certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// serial draws a random 127-bit serial number from r. An entropy failure is
// an error: a nil serial would only fail later, in CreateCertificate, with a
// message that hides the cause.
func serial(r io.Reader) (*big.Int, error) {
	n, err := rand.Int(r, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("draw a serial number: %w", err)
	}
	return n, nil
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func parseKey(data []byte) (crypto.Signer, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM key")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("key cannot sign")
	}
	return s, nil
}

func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

func encodeCerts(certs []*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return buf.Bytes()
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ka, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ka.Equal(b)
}
