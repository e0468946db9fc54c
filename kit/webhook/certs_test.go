package webhook

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var testPolicy = CertPolicy{DNSNames: []string{"w.ns.svc"}, IPs: []net.IP{net.ParseIP("127.0.0.1")},
	CAValidity: 300 * 24 * time.Hour, CertValidity: 30 * 24 * time.Hour}

// verify checks the serving certificate against the bundle for name at now.
func verify(t *testing.T, data CertData, name string, now time.Time) error {
	t.Helper()
	certs, err := parseCerts(data[KeyTLSCert])
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(data[KeyCACert]))
	_, err = certs[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now})
	return err
}

func TestPlanCerts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	data, changed, err := PlanCerts(t0, nil, testPolicy)
	require.NoError(t, err)
	require.True(t, changed, "nothing yet: generate")
	require.NoError(t, verify(t, data, "w.ns.svc", t0))
	require.NoError(t, verify(t, data, "127.0.0.1", t0), "a local process is reached by IP")

	same, changed, err := PlanCerts(t0.Add(19*24*time.Hour), data, testPolicy)
	require.NoError(t, err)
	assert.False(t, changed, "valid and not due: keep")
	assert.Equal(t, data, same)

	// Less than a third of the serving certificate's life left: re-issued by
	// the same CA, so the caBundle does not change.
	renewed, changed, err := PlanCerts(t0.Add(21*24*time.Hour), data, testPolicy)
	require.NoError(t, err)
	require.True(t, changed)
	assert.Equal(t, data[KeyCACert], renewed[KeyCACert])
	assert.NotEqual(t, data[KeyTLSCert], renewed[KeyTLSCert])
	require.NoError(t, verify(t, renewed, "w.ns.svc", t0.Add(40*24*time.Hour)))

	// A new name to cover (Service renamed): re-issued.
	p2 := testPolicy
	p2.DNSNames = append([]string{"w2.ns.svc"}, p2.DNSNames...)
	other, changed, err := PlanCerts(t0.Add(time.Hour), data, p2)
	require.NoError(t, err)
	require.True(t, changed)
	require.NoError(t, verify(t, other, "w2.ns.svc", t0.Add(time.Hour)))

	// CA due: a new CA signs; the old stays in the bundle until it expires,
	// so certificates other replicas still serve stay trusted.
	pre, changed, err := PlanCerts(t0.Add(195*24*time.Hour), renewed, testPolicy)
	require.NoError(t, err)
	require.True(t, changed, "serving certificate expired: re-issued")
	assert.Equal(t, renewed[KeyCACert], pre[KeyCACert], "CA not due yet")
	tCA := t0.Add(210 * 24 * time.Hour)
	rotated, changed, err := PlanCerts(tCA, pre, testPolicy)
	require.NoError(t, err)
	require.True(t, changed)
	bundle, err := parseCerts(rotated[KeyCACert])
	require.NoError(t, err)
	require.Len(t, bundle, 2)
	require.NoError(t, verify(t, rotated, "w.ns.svc", tCA))
	old := CertData{KeyTLSCert: pre[KeyTLSCert], KeyCACert: rotated[KeyCACert]}
	require.NoError(t, verify(t, old, "w.ns.svc", tCA), "the old serving certificate is still trusted")
	// Once the old CA expired it leaves the bundle.
	later, _, err := PlanCerts(t0.Add(301*24*time.Hour), rotated, testPolicy)
	require.NoError(t, err)
	bundle, err = parseCerts(later[KeyCACert])
	require.NoError(t, err)
	assert.Len(t, bundle, 1)

	// Garbage: start over.
	fresh, changed, err := PlanCerts(t0, CertData{KeyCACert: []byte("x"), KeyTLSCert: []byte("y")}, testPolicy)
	require.NoError(t, err)
	assert.True(t, changed)
	require.NoError(t, verify(t, fresh, "w.ns.svc", t0))
}

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Two replicas starting together serve the same certificate: the one whose
// create loses reads the winner's Secret.
func TestSecretCertsCreateOrGet(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	a := NewSecretCerts(client, "ns", "certs", testPolicy, clk)
	b := NewSecretCerts(client, "ns", "certs", testPolicy, clk)

	// b's create races with a's: a creates between b's get and b's create.
	raced := false
	client.PrependReactor("create", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		// (the fake client is locked during a reaction: write the winner's
		// Secret straight into its tracker)
		winner, _, err := PlanCerts(clk.Now(), nil, testPolicy)
		require.NoError(t, err)
		require.NoError(t, client.Tracker().Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "certs"}, Data: winner}))
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, "certs")
	})
	var changes int
	b.OnChange = func() { changes++ }
	require.NoError(t, b.Ensure(context.Background()))
	require.NoError(t, a.Ensure(context.Background()))
	require.NotNil(t, a.CABundle())
	assert.Equal(t, a.CABundle(), b.CABundle())
	ca, _ := a.GetCertificate(nil)
	cb, _ := b.GetCertificate(nil)
	assert.Equal(t, ca.Certificate, cb.Certificate, "both replicas serve the same certificate")
	assert.Equal(t, 1, changes)

	// Nothing due: a re-read writes nothing.
	client.ClearActions()
	require.NoError(t, b.Ensure(context.Background()))
	for _, act := range client.Actions() {
		assert.Equal(t, "get", act.GetVerb())
	}
	assert.Equal(t, 1, changes, "same bundle: no trigger")
}

// A renewal racing with another replica's: the Conflict makes it re-read,
// find the other's fresh certificates and keep them.
func TestSecretCertsRenewalConflict(t *testing.T) {
	t0 := time.Now()
	data, _, err := PlanCerts(t0, nil, testPolicy)
	require.NoError(t, err)
	client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "certs"}, Data: data})
	clk := clocktesting.NewFakePassiveClock(t0.Add(25 * 24 * time.Hour))
	a := NewSecretCerts(client, "ns", "certs", testPolicy, clk)
	b := NewSecretCerts(client, "ns", "certs", testPolicy, clk)
	first := true
	client.PrependReactor("update", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if !first {
			return false, nil, nil
		}
		first = false
		// a renews first (written into the tracker: the fake client is
		// locked during a reaction)
		renewed, _, err := PlanCerts(clk.Now(), data, testPolicy)
		require.NoError(t, err)
		require.NoError(t, client.Tracker().Update(secretsGVR, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "certs"}, Data: renewed}, "ns"))
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "certs", nil)
	})
	require.NoError(t, b.Ensure(context.Background()))
	require.NoError(t, a.Ensure(context.Background()))
	ca, _ := a.GetCertificate(nil)
	cb, _ := b.GetCertificate(nil)
	assert.Equal(t, ca.Certificate, cb.Certificate)
	sec, err := client.Tracker().Get(secretsGVR, "ns", "certs")
	require.NoError(t, err)
	renewed := CertData(sec.(*corev1.Secret).Data)
	assert.NotEqual(t, data[KeyTLSCert], renewed[KeyTLSCert])
	require.NoError(t, verify(t, renewed, "w.ns.svc", clk.Now().Add(20*24*time.Hour)))
}

// External certificates are read from files and reloaded when they change.
func TestFileCerts(t *testing.T) {
	dir := t.TempDir()
	f := NewFileCerts(dir)
	require.Error(t, f.Ensure(context.Background()), "no files yet")
	write := func(d CertData, withCA bool) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, KeyTLSCert), d[KeyTLSCert], 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, KeyTLSKey), d[KeyTLSKey], 0o600))
		if withCA {
			require.NoError(t, os.WriteFile(filepath.Join(dir, KeyCACert), d[KeyCACert], 0o600))
		}
	}
	d1, _, _ := PlanCerts(time.Now(), nil, testPolicy)
	write(d1, false)
	require.NoError(t, f.Ensure(context.Background()))
	assert.Nil(t, f.CABundle(), "no ca.crt: nothing to inject (cert-manager's CA injector does it)")
	c1, err := f.GetCertificate(nil)
	require.NoError(t, err)

	d2, _, _ := PlanCerts(time.Now(), nil, testPolicy)
	write(d2, true)
	changed := false
	f.OnChange = func() { changed = true }
	require.NoError(t, f.Ensure(context.Background()))
	c2, _ := f.GetCertificate(nil)
	assert.NotEqual(t, c1.Certificate, c2.Certificate, "renewed files are served")
	assert.Equal(t, d2[KeyCACert], f.CABundle())
	assert.True(t, changed)
}

// Issue 26 item 13: an entropy failure while drawing a serial number is an
// error naming the cause, not a nil serial handed to CreateCertificate.
func TestSerialReportsEntropyFailure(t *testing.T) {
	_, err := serial(iotest.ErrReader(errors.New("entropy exhausted")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "draw a serial number: entropy exhausted")

	a, err := serial(rand.Reader)
	require.NoError(t, err)
	b, err := serial(rand.Reader)
	require.NoError(t, err)
	assert.Positive(t, a.Sign())
	assert.NotEqual(t, a, b)
}
