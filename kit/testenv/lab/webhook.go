package lab

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Webhook is a webhook binary's serving half run in-process for one test:
// kit/webhook's component (server, certificates kept in a Secret, CA bundle
// injection into the binary's configurations) on a free port of 127.0.0.1,
// which the real API server calls over TLS by URL through configurations the
// test installs (InstallMutating, InstallValidating). The test registers its
// handlers on the component's Server, adds the informer factories they read
// (Informers) and whatever else a replica runs beside the server (Go), then
// calls Serve.
type Webhook struct {
	*kitwebhook.Component
	// Port is the server's port on 127.0.0.1.
	Port int
	// Metrics is the registry of the server's metrics
	// (webhook_requests_total, …).
	Metrics *prometheus.Registry

	lab       *Lab
	refs      []kitwebhook.ConfigRef
	factories []CacheFactory
	runs      []func(context.Context)
}

// CacheFactory is an informer factory a webhook reads from: client-go's,
// Flotilla's, or the one kit/webhook.WatchConfig returns.
type CacheFactory interface {
	testenv.InformerFactory
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
}

// NewWebhook builds the webhook component of a binary whose Service is
// service and whose certificates are kept in Secret "webhook-certs" of
// namespace home (generated on its first run, as in a fresh install); its CA
// bundle goes into every entry of the configurations refs. Nothing runs
// before Serve.
func (l *Lab) NewWebhook(home, service string, refs ...kitwebhook.ConfigRef) *Webhook {
	l.T.Helper()
	w := &Webhook{Port: freePort(l.T), Metrics: prometheus.NewRegistry(), lab: l, refs: refs}
	opts := kitwebhook.Options{Host: "127.0.0.1", Port: w.Port, SecretName: "webhook-certs", Namespace: home, ServiceName: service}
	c, err := kitwebhook.New(opts, l.Env.Kube, w.Metrics, nil, refs...)
	if err != nil {
		l.T.Fatalf("lab: webhook component: %v", err)
	}
	w.Component = c
	return w
}

// freePort returns a port of 127.0.0.1 nothing listens on now.
func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("lab: free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// URL is the address the API server calls path of this server at (a
// configuration entry's clientConfig.url).
func (w *Webhook) URL(path string) *string {
	u := fmt.Sprintf("https://127.0.0.1:%d%s", w.Port, path)
	return &u
}

// Informers adds informer factories the handlers read: Serve starts them
// and waits for their caches before it serves, and they are shut down when
// the webhook stops. Request their informers before Serve.
func (w *Webhook) Informers(fs ...CacheFactory) { w.factories = append(w.factories, fs...) }

// Go runs f beside the server (scope syncers, …) from Serve until the
// webhook stops; f returns when its context is done.
func (w *Webhook) Go(f func(ctx context.Context)) { w.runs = append(w.runs, f) }

// Serve starts the informer factories, waits for their caches and runs the
// component and what Go added, with a logger naming the test; it returns
// once the server is ready and every entry of each of its configurations
// carries the CA bundle it serves with and the API server has read them
// (AwaitInEffect), that is once the API server calls it. The returned function stops it all (cancels, waits until every
// goroutine has returned, shuts the factories down); it is also called when
// the test ends, and only its first call has an effect.
func (w *Webhook) Serve() (stop func()) {
	t := w.lab.T
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().WithValues("test", t.Name(), "component", "webhook")))
	for _, f := range w.factories {
		f.Start(ctx.Done())
	}
	for _, f := range w.factories {
		f.WaitForCacheSync(ctx.Done())
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := w.Run(ctx); err != nil {
			t.Errorf("webhook: %v", err)
		}
	})
	for _, f := range w.runs {
		wg.Go(func() { f(ctx) })
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			for _, f := range w.factories {
				f.Shutdown()
			}
		})
	}
	t.Cleanup(stop)
	testenv.Eventually(t, w.lab.Timeout, func() (bool, error) { return w.Ready() == nil, nil })
	testenv.Eventually(t, w.lab.Timeout, w.caInjected)
	for _, kind := range w.kinds() {
		w.lab.AwaitInEffect(kind) // the API server has read the injected CA bundles
	}
	return stop
}

// kinds are the kinds of the webhook's configurations, each once.
func (w *Webhook) kinds() []kitwebhook.ConfigKind {
	var out []kitwebhook.ConfigKind
	for _, ref := range w.refs {
		if !slices.Contains(out, ref.Kind) {
			out = append(out, ref.Kind)
		}
	}
	return out
}

// caInjected reports whether every entry of each of the webhook's
// configurations carries the CA bundle it serves with.
func (w *Webhook) caInjected() (bool, error) {
	want := w.CABundle()
	if len(want) == 0 {
		return false, nil
	}
	for _, ref := range w.refs {
		bundles, err := w.lab.caBundles(ref)
		if err != nil {
			return false, err
		}
		for _, b := range bundles {
			if !bytes.Equal(b, want) {
				return false, nil
			}
		}
	}
	return true, nil
}

// caBundles returns the caBundle of each entry of the configuration ref.
func (l *Lab) caBundles(ref kitwebhook.ConfigRef) ([][]byte, error) {
	ctx, api := context.Background(), l.Env.Kube.AdmissionregistrationV1()
	var out [][]byte
	var err error
	switch ref.Kind {
	case kitwebhook.Mutating:
		var c *admissionregistrationv1.MutatingWebhookConfiguration
		if c, err = api.MutatingWebhookConfigurations().Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
			for _, e := range c.Webhooks {
				out = append(out, e.ClientConfig.CABundle)
			}
		}
	case kitwebhook.Validating:
		var c *admissionregistrationv1.ValidatingWebhookConfiguration
		if c, err = api.ValidatingWebhookConfigurations().Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
			for _, e := range c.Webhooks {
				out = append(out, e.ClientConfig.CABundle)
			}
		}
	default:
		return nil, fmt.Errorf("unknown webhook configuration kind %q", ref.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", ref, err)
	}
	return out, nil
}

// Requests is how many admission requests the handler registered as
// handler (its metrics name, Server.Register) has answered, whatever the
// result: the sum of webhook_requests_total{webhook=handler}.
func (w *Webhook) Requests(handler string) float64 {
	w.lab.T.Helper()
	families, err := w.Metrics.Gather()
	if err != nil {
		w.lab.T.Fatalf("lab: webhook metrics: %v", err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == handler {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// InstallMutating creates the MutatingWebhookConfiguration c, deleted when
// the test ends (after a webhook served later has stopped), and returns once
// the API server admits through it (AwaitInEffect).
func (l *Lab) InstallMutating(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	l.T.Helper()
	install(l.T, l.Env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations(), c)
	l.AwaitInEffect(kitwebhook.Mutating)
}

// InstallValidating creates the ValidatingWebhookConfiguration c, deleted
// when the test ends (after a webhook served later has stopped), and
// returns once the API server admits through it (AwaitInEffect).
func (l *Lab) InstallValidating(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	l.T.Helper()
	install(l.T, l.Env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations(), c)
	l.AwaitInEffect(kitwebhook.Validating)
}

// install creates the cluster-scoped obj through client and deletes it when
// the test ends.
func install[T metav1.Object](t testing.TB, client interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}, obj T) {
	t.Helper()
	if _, err := client.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("lab: create %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = client.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}) })
}
