package webhook

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// Options are a webhook binary's flags.
type Options struct {
	// Host and Port to listen on (default all addresses, 9443).
	Host string
	Port int
	// CertDir, when set, serves tls.crt/tls.key from that directory
	// (cert-manager or any mounted Secret) instead of self-managed
	// certificates; ca.crt, if present, is injected as the caBundle.
	CertDir string
	// SecretName and Namespace of the self-managed certificate Secret.
	SecretName string
	Namespace  string
	// ServiceName is the webhook Service: the serving certificate covers
	// <ServiceName>.<Namespace>.svc (and .cluster.local), plus localhost and
	// 127.0.0.1 for a local process.
	ServiceName string
	// ConversionServiceName is the Service ServeConversion writes into the
	// CRDs' conversion stanza (empty: ServiceName). A binary whose readiness
	// waits on an informer of a converted kind needs its own Service here,
	// one with publishNotReadyAddresses: a Service's endpoints hold only
	// Ready pods, so conversion behind the admission Service would wait on
	// the readiness that waits on conversion (issue 23). The serving
	// certificate covers its DNS names too.
	ConversionServiceName string
	// ShutdownDelay: see ServerOptions (default 3s).
	ShutdownDelay time.Duration
	// Disabled turns the server off (no webhook configuration installed).
	Disabled bool
	// ClientCAFile, when set, makes the server require a client
	// certificate signed by one of these CAs (the API server's, configured
	// in its AdmissionConfiguration); ClientNames restricts the accepted
	// identities (CN or DNS SAN). Empty: callers are not authenticated, and
	// the overlays' NetworkPolicy is what keeps pods away (see README).
	ClientCAFile string
	ClientNames  []string
	// ExternalCRDConversion: the conversion stanza of the CRDs this binary
	// converts is kept by something else (on the local control plane,
	// hack/cluster/local-convert.sh, which every v1alpha1 client needs also
	// while no controller runs): ServeConversion serves conversion but
	// never writes the stanza, so the two never fight over its Service and
	// CA.
	ExternalCRDConversion bool
}

// DefaultOptions for binary name: Secret <name>-webhook-certs and Service
// <name>-webhook in $POD_NAMESPACE (else flotilla-system).
func DefaultOptions(name string) Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = kitapp.DefaultLeaseNamespace
	}
	return Options{Port: 9443, SecretName: name + "-webhook-certs", Namespace: ns, ServiceName: name + "-webhook", ShutdownDelay: 3 * time.Second}
}

// AddFlags binds the options.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Host, "webhook-host", o.Host, "Address the admission webhook server listens on (empty: all).")
	fs.IntVar(&o.Port, "webhook-port", o.Port, "Port of the admission webhook server.")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", o.CertDir, "Directory with tls.crt, tls.key (and optionally ca.crt) provided externally, e.g. by cert-manager. Empty: certificates are generated and kept in --webhook-secret-name.")
	fs.StringVar(&o.SecretName, "webhook-secret-name", o.SecretName, "Secret holding the self-managed webhook CA and serving certificate, shared by every replica.")
	fs.StringVar(&o.Namespace, "webhook-secret-namespace", o.Namespace, "Namespace of the certificate Secret and the webhook Service (default: $POD_NAMESPACE, else flotilla-system).")
	fs.StringVar(&o.ServiceName, "webhook-service-name", o.ServiceName, "Service in front of the webhook replicas; the serving certificate covers its DNS names.")
	fs.StringVar(&o.ConversionServiceName, "webhook-conversion-service-name", o.ConversionServiceName, "Service the CRDs' conversion stanza names (one publishing not-ready addresses, when readiness waits on a converted kind); the serving certificate covers its DNS names too. Empty: --webhook-service-name.")
	fs.DurationVar(&o.ShutdownDelay, "webhook-shutdown-delay", o.ShutdownDelay, "On shutdown, keep serving webhooks this long (not ready) so the API server stops calling this replica first.")
	fs.BoolVar(&o.Disabled, "webhook-disable", o.Disabled, "Do not serve admission webhooks.")
	fs.StringVar(&o.ClientCAFile, "webhook-client-ca", o.ClientCAFile, "PEM file of the CAs signing the client certificate the API server presents to webhooks (its AdmissionConfiguration kubeConfigFile); when set, callers without such a certificate are refused. Empty: callers are not authenticated.")
	fs.StringSliceVar(&o.ClientNames, "webhook-client-names", o.ClientNames, "Accepted webhook client identities (certificate CN or DNS name), with --webhook-client-ca; empty: any certificate the CA signed.")
	fs.BoolVar(&o.ExternalCRDConversion, "webhook-external-crd-conversion", o.ExternalCRDConversion, "Serve CRD conversion but never write the CRDs' conversion stanza (Service, caBundle): something else keeps it (the local control plane's conversion endpoint, hack/cluster/local-convert.sh).")
}

// Validate reports invalid options.
func (o *Options) Validate() error {
	if o.Disabled {
		return nil
	}
	switch {
	case o.Port < 0 || o.Port > 65535:
		return fmt.Errorf("--webhook-port %d out of range", o.Port)
	case o.CertDir == "" && (o.SecretName == "" || o.Namespace == ""):
		return fmt.Errorf("self-managed webhook certificates need --webhook-secret-name and --webhook-secret-namespace")
	case len(o.ClientNames) > 0 && o.ClientCAFile == "":
		return fmt.Errorf("--webhook-client-names needs --webhook-client-ca")
	}
	return nil
}

// conversionServiceName is the Service the CRDs' conversion stanza names:
// --webhook-conversion-service-name, else --webhook-service-name.
func (o *Options) conversionServiceName() string {
	if o.ConversionServiceName != "" {
		return o.ConversionServiceName
	}
	return o.ServiceName
}

// CertPolicy is the certificate policy these options ask for: the DNS
// names of the webhook Service and, when it differs, of the conversion
// Service (the API server checks the name it dials).
func (o *Options) CertPolicy() CertPolicy {
	services := []string{o.ServiceName}
	if cs := o.conversionServiceName(); cs != o.ServiceName {
		services = append(services, cs)
	}
	var names []string
	for _, name := range services {
		svc := name + "." + o.Namespace + ".svc"
		names = append(names, svc, svc+".cluster.local", name+"."+o.Namespace)
	}
	return CertPolicy{
		DNSNames: append(names, "localhost"),
		IPs:      []net.IP{net.ParseIP("127.0.0.1")},
	}
}

// certSource is SecretCerts or FileCerts.
type certSource interface {
	CertSource
	CABundle() []byte
	Ensure(ctx context.Context) error
	Run(ctx context.Context)
}

// Component is a binary's admission webhook: server, certificates and CA
// bundle injection, run on every replica (kit/app ReplicaComponent).
type Component struct {
	Server   *Server
	Injector *CABundleInjector
	// Conversion keeps the conversion stanza of the CRDs this binary
	// converts (ServeConversion); nil when it converts none.
	Conversion *CRDConversion
	certs      certSource
	opts       Options
}

// New builds the component; register handlers on c.Server before it runs.
// refs are the binary's own webhook configurations (the caBundle goes into
// each of their entries).
func New(opts Options, client kubernetes.Interface, reg prometheus.Registerer, clk clock.PassiveClock, refs ...ConfigRef) (*Component, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	metrics, err := NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	var certs certSource
	var onChange *func()
	if opts.CertDir != "" {
		f := NewFileCerts(opts.CertDir)
		certs, onChange = f, &f.OnChange
	} else {
		s := NewSecretCerts(client, opts.Namespace, opts.SecretName, opts.CertPolicy(), clk)
		certs, onChange = s, &s.OnChange
	}
	var auth *ClientAuth
	if opts.ClientCAFile != "" {
		auth = &ClientAuth{CAFile: opts.ClientCAFile, Names: opts.ClientNames}
	}
	c := &Component{
		Server: NewServer(ServerOptions{BindAddress: net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)), Clock: clk,
			ShutdownDelay: opts.ShutdownDelay, ClientAuth: auth}, certs, metrics),
		certs: certs,
		opts:  opts,
	}
	c.Injector = NewCABundleInjector(client, certs.CABundle, refs...)
	c.Injector.Refresh = certs.Ensure
	*onChange = func() {
		c.Injector.Trigger()
		if c.Conversion != nil {
			c.Conversion.Trigger()
		}
	}
	return c, nil
}

// ServeConversion serves CRD conversion with convert on ConversionPath
// (metrics label name, e.g. "daemonset-convert") and keeps the
// spec.conversion of the CRDs named crdNames calling this binary's Service
// (--webhook-conversion-service-name, default --webhook-service-name, in
// --webhook-secret-namespace, port 443 unless the CRD names one) with
// its CA bundle (PlanConversion), unless Options.ExternalCRDConversion.
// Call it once, before Run; fieldManager is the binary's name.
func (c *Component) ServeConversion(crds apiextensionsclient.CustomResourceDefinitionInterface, fieldManager, name string, convert ConvertFunc, crdNames ...string) {
	c.Server.RegisterConversion(ConversionPath, name, convert)
	if c.opts.ExternalCRDConversion {
		return
	}
	svc := ConversionService{Namespace: c.opts.Namespace, Name: c.opts.conversionServiceName(), Path: ConversionPath, Port: 443}
	c.Conversion = NewCRDConversion(crds, svc, fieldManager, c.certs.CABundle, crdNames...)
	c.Conversion.Refresh = c.certs.Ensure
}

// CABundle is the bundle currently served.
func (c *Component) CABundle() []byte { return c.certs.CABundle() }

// Run loads the certificates (retrying until it can: the replica is not
// ready meanwhile), then keeps them and the configurations' caBundle
// current and serves until ctx is done.
func (c *Component) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if synced := kitapp.ReplicaSyncedFrom(ctx); synced != nil {
		c.Server.HoldAdmissionUntil(synced)
	}
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 30 * time.Second, Steps: 1 << 30}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if err := c.certs.Ensure(ctx); err != nil {
			logger.Error(err, "Webhook certificates not available yet; retrying")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	go c.certs.Run(ctx)
	go c.Injector.Run(ctx)
	if c.Conversion != nil {
		go c.Conversion.Run(ctx)
	}
	return c.Server.Run(ctx)
}

// Ready is the "webhook serving" check.
func (c *Component) Ready() error { return c.Server.Ready() }

// ReplicaComponent registers the component with kit/app so it runs on every
// replica and gates /readyz. A component serving CRD conversion starts before
// the replica informers sync (Early): they may read the kind it converts, and
// the stanza it keeps (Service, caBundle) may be another's until it runs —
// OpenKruise's after a takeover. Its admission paths wait for the caches.
func (c *Component) ReplicaComponent() kitapp.ReplicaComponent {
	return kitapp.ReplicaComponent{Name: "webhook", Run: c.Run, Ready: c.Ready, Early: c.Server.servesConversion()}
}
