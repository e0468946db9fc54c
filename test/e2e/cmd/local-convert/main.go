// Command local-convert is the CRD conversion endpoint of the local control plane (hack/cluster): the
// DaemonSet and SidecarSet CRDs store v1beta1 and convert with strategy Webhook, so every v1alpha1 client
// (Flotilla's controllers, the tests, the samples) needs a conversion webhook, also while no controller runs
// (`make test` stops the `make run` controllers). hack/cluster/local-convert.sh starts it with the cluster.
//
// It serves kit/webhook's conversion handler with apis/apps/conversion.Convert on --bind-address (this host's
// non-loopback address: the API server routes to a Service's endpoints, which may not be 127.0.0.1) with a
// certificate of the cluster CA, and keeps, every --resync:
//   - namespace --namespace (flotilla-local: never the flotilla-system that installs create and delete);
//   - there, the selector-less Services daemonset-controller-webhook (port 19445) and
//     sidecarset-controller-conversion (port 19443), the names and ports of the CRDs' stanza, with Endpoints to
//     itself; a stanza in --namespace naming another Service (e.g. sidecarset-controller-webhook, before issue 23)
//     is pointed at these;
//   - the caBundle of each of the two CRDs whose stanza names a Service in --namespace (a stanza naming another
//     namespace belongs to controllers installed there, which write it themselves: left alone), and points at
//     --namespace a stanza naming a Service of --adopt-namespace (flotilla-system) that does not exist (the
//     shipped CRDs re-applied by an install since uninstalled).
//
// No leader election: one instance per local cluster.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/apis/apps/conversion"
	"github.com/flotilla-dev/flotilla/kit/webhook"
)

// target is one CRD converted here and the Service its stanza names (deploy/base/crds, apis/crd-patches).
type target struct {
	crd, service string
	port         int32
}

var targets = []target{
	{"daemonsets.apps.kruise.io", "daemonset-controller-webhook", 19445},
	{"sidecarsets.apps.kruise.io", "sidecarset-controller-conversion", 19443},
}

const fieldManager = "flotilla-local-convert"

func main() {
	var kubeconfig, certDir, bind, namespace, adopt string
	var resync time.Duration
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the local cluster")
	flag.StringVar(&certDir, "cert-dir", "", "directory with tls.crt, tls.key and ca.crt (the cluster CA)")
	flag.StringVar(&bind, "bind-address", "", "host:port to serve on; the host is the Services' endpoint (not loopback)")
	flag.StringVar(&namespace, "namespace", "flotilla-local", "namespace of the Services the CRDs' stanza names")
	flag.StringVar(&adopt, "adopt-namespace", "flotilla-system", "a stanza naming a Service in this namespace that does not exist is pointed here (empty: never)")
	flag.DurationVar(&resync, "resync", 5*time.Second, "how often the Services, Endpoints and caBundles are re-asserted")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(kubeconfig, certDir, bind, namespace, adopt, resync); err != nil {
		klog.ErrorS(err, "local-convert failed")
		os.Exit(1)
	}
}

func run(kubeconfig, certDir, bind, namespace, adopt string, resync time.Duration) error {
	host, portStr, err := net.SplitHostPort(bind)
	if err != nil {
		return fmt.Errorf("--bind-address %q: %w", bind, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
		return fmt.Errorf("--bind-address %q: need this host's non-loopback IP (it is the Services' endpoint)", bind)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("--bind-address %q: %w", bind, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	// The Endpoints API's deprecation warning, once per pass, says nothing here (kube-controller-manager mirrors
	// selector-less Endpoints to EndpointSlices).
	cfg.WarningHandler = rest.NoWarnings{}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())

	certs := webhook.NewFileCerts(certDir)
	if err := certs.Ensure(ctx); err != nil {
		return fmt.Errorf("loading certificates from %s: %w", certDir, err)
	}
	go certs.Run(ctx)
	srv := webhook.NewServer(webhook.ServerOptions{BindAddress: bind}, certs, nil)
	srv.RegisterConversion(webhook.ConversionPath, "local-convert", func(obj *unstructured.Unstructured, to string) error {
		return conversion.Convert(obj, to)
	})
	if err := srv.Listen(); err != nil {
		return fmt.Errorf("listening on %s: %w", bind, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Run(ctx) }()

	k := &keeper{kube: kube, ext: ext, namespace: namespace, adopt: adopt, ip: ip.String(), port: int32(port), bundle: certs.CABundle}
	t := time.NewTicker(resync)
	defer t.Stop()
	for {
		if err := k.sync(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Re-asserting the local conversion endpoint failed; retrying")
		}
		select {
		case <-ctx.Done():
			return <-errc
		case err := <-errc:
			return fmt.Errorf("conversion server: %w", err)
		case <-t.C:
		}
	}
}

// keeper re-asserts the Services, Endpoints and CRD caBundles (bounded work: one namespace, two Services, two
// Endpoints, two CRDs per pass; server-side applies that change nothing write nothing).
type keeper struct {
	kube      kubernetes.Interface
	ext       apiextensionsclient.Interface
	namespace string
	adopt     string // see syncCRD
	ip        string
	port      int32
	bundle    func() []byte
}

func (k *keeper) sync(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "flotilla-local"}}}
	if _, err := k.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", k.namespace, err)
	}
	force := metav1.PatchOptions{FieldManager: fieldManager, Force: ptrTrue()}
	for _, t := range targets {
		if err := k.syncService(ctx, t, force); err != nil {
			return err
		}
		if err := k.syncCRD(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

func ptrTrue() *bool { b := true; return &b }

func (k *keeper) syncService(ctx context.Context, t target, opts metav1.PatchOptions) error {
	labels := map[string]string{"app.kubernetes.io/part-of": "flotilla-local"}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: t.service, Namespace: k.namespace, Labels: labels},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "conversion", Port: t.port, Protocol: corev1.ProtocolTCP,
			TargetPort: intstr.FromInt32(k.port)}}},
	}
	data, err := json.Marshal(svc)
	if err != nil {
		return err
	}
	if _, err := k.kube.CoreV1().Services(k.namespace).Patch(ctx, t.service, types.ApplyPatchType, data, opts); err != nil {
		return fmt.Errorf("applying Service %s/%s: %w", k.namespace, t.service, err)
	}
	//nolint:staticcheck // Endpoints of a selector-less Service: kube-controller-manager mirrors them to an EndpointSlice.
	eps := &corev1.Endpoints{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
		ObjectMeta: metav1.ObjectMeta{Name: t.service, Namespace: k.namespace, Labels: labels},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: k.ip}},
			Ports: []corev1.EndpointPort{{Name: "conversion", Port: k.port, Protocol: corev1.ProtocolTCP}}}},
	}
	if data, err = json.Marshal(eps); err != nil {
		return err
	}
	if _, err := k.kube.CoreV1().Endpoints(k.namespace).Patch(ctx, t.service, types.ApplyPatchType, data, opts); err != nil {
		return fmt.Errorf("applying Endpoints %s/%s: %w", k.namespace, t.service, err)
	}
	return nil
}

// syncCRD writes the caBundle and the Service name of a CRD whose stanza names a Service in k.namespace
// (PlanConversion keeps the port as shipped; the name is the target's, so a stanza applied before the SidecarSet
// CRD named sidecarset-controller-conversion is pointed at it).
func (k *keeper) syncCRD(ctx context.Context, t target) error {
	crds := k.ext.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, t.crd, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // not installed (yet): testenv or make run installs it
	}
	if err != nil {
		return fmt.Errorf("reading CRD %s: %w", t.crd, err)
	}
	if !namesNamespace(crd.Spec.Conversion, k.namespace) {
		// The shipped stanza (deploy/base/crds names flotilla-system) whose Service is gone: re-applied by an
		// install that is uninstalled since (test/e2e/install, the Helm install test), it converts nothing, and every
		// v1alpha1 client of the kind fails until something points it back. While the Service exists, the
		// controllers installed there serve and keep the stanza: left alone, as is a stanza naming any other
		// namespace (another product's, or an operator's).
		if !namesNamespace(crd.Spec.Conversion, k.adopt) || k.adopt == "" {
			return nil
		}
		svcRef := crd.Spec.Conversion.Webhook.ClientConfig.Service
		_, err := k.kube.CoreV1().Services(svcRef.Namespace).Get(ctx, svcRef.Name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return err // nil: it is served there
		}
		return k.repoint(ctx, crd.Name, crd.ResourceVersion, crd.Spec.Conversion, t)
	}
	svc := webhook.ConversionService{Namespace: k.namespace, Name: t.service, Path: webhook.ConversionPath, Port: t.port}
	want, changed := webhook.PlanConversion(crd.Spec.Conversion, svc, k.bundle())
	if !changed {
		return nil
	}
	return k.patch(ctx, t.crd, crd.ResourceVersion, want, "Wrote the local conversion endpoint's CA into the CRD")
}

// repoint points a stanza at the local endpoint's Service (its namespace, name and port) with its CA.
func (k *keeper) repoint(ctx context.Context, name, resourceVersion string, cur *apiextensionsv1.CustomResourceConversion, t target) error {
	want := cur.DeepCopy()
	want.Webhook.ClientConfig.Service = &apiextensionsv1.ServiceReference{Namespace: k.namespace, Name: t.service,
		Path: ptrString(webhook.ConversionPath), Port: ptrInt32(t.port)}
	want.Webhook.ClientConfig.CABundle = k.bundle()
	return k.patch(ctx, name, resourceVersion, want, "Pointed the CRD's conversion at the local endpoint: the Service it named is gone")
}

func ptrString(s string) *string { return &s }
func ptrInt32(i int32) *int32    { return &i }

func (k *keeper) patch(ctx context.Context, name, resourceVersion string, want *apiextensionsv1.CustomResourceConversion, msg string) error {
	// A merge patch of the stanza on the version judged (a CRD re-pointed meanwhile is a conflict, judged again
	// at the next pass).
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": resourceVersion},
		"spec":     map[string]any{"conversion": want},
	})
	if err != nil {
		return err
	}
	crds := k.ext.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("writing the conversion stanza of CRD %s: %w", name, err)
	}
	klog.FromContext(ctx).Info(msg, "crd", name)
	return nil
}

// namesNamespace: the stanza is Webhook by a Service in namespace.
func namesNamespace(c *apiextensionsv1.CustomResourceConversion, namespace string) bool {
	return c != nil && c.Strategy == apiextensionsv1.WebhookConverter && c.Webhook != nil && c.Webhook.ClientConfig != nil &&
		c.Webhook.ClientConfig.Service != nil && c.Webhook.ClientConfig.Service.Namespace == namespace
}
