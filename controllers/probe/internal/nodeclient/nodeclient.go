// Package nodeclient is the node agent's (probe-agent's) access to the API server without client-go's typed
// clientsets: plain k8s.io/client-go/rest clients over a scheme that knows core/v1 and Flotilla's
// apps.kruise.io v1alpha1 and v1beta1 only, the agent's few informers, and the handful of typed calls it makes.
//
// Why: the agent runs on every node and must stay within 30 MiB RSS. k8s.io/client-go/kubernetes, its informer
// factories and every generated typed client (Flotilla's client/clientset/versioned and its typed packages
// included: their applyconfigurations import k8s.io/client-go/kubernetes/scheme) register every API group of
// Kubernetes at init, and that registration alone is most of the agent's resident memory. Nothing here imports
// them; listers (k8s.io/client-go/listers/core/v1, Flotilla's client/listers/...) can be built over the
// informers' indexers, and tools/cache, tools/record and util/workqueue are free of them too.
//
// Every call returns the API server's errors as they come (apierrors.IsNotFound, IsConflict, … work on them).
package nodeclient

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// Scheme knows core/v1, Flotilla's apps.kruise.io v1alpha1 and v1beta1, and the meta/v1 options (ListOptions,
// UpdateOptions, …) of each of those group/versions. It is also the scheme for an event recorder of the agent
// (record.EventBroadcaster.NewRecorder): it knows every kind the agent records events about.
var Scheme = runtime.NewScheme()

// Codecs encodes and decodes the kinds of Scheme (JSON and protobuf).
var Codecs = serializer.NewCodecFactory(Scheme)

// ParameterCodec turns meta/v1 options into query parameters.
var ParameterCodec = runtime.NewParameterCodec(Scheme)

func init() { utilruntime.Must(AddToScheme(Scheme)) }

// AddToScheme adds the kinds of Scheme to s.
func AddToScheme(s *runtime.Scheme) error {
	// The options of the core group's version; each group below registers its own.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}

// Clients are REST clients of the group/versions the agent uses, sharing one HTTP client (one connection pool).
type Clients struct {
	// Core is core/v1 (/api/v1), protobuf on the wire as kit/app's clientset for built-in kinds.
	Core rest.Interface
	// AppsV1alpha1 and AppsV1beta1 are apps.kruise.io (/apis), JSON (custom resources have no protobuf).
	AppsV1alpha1 rest.Interface
	AppsV1beta1  rest.Interface
}

// New builds the clients from cfg (as kit/app makes it: user agent, QPS and burst). Like the two clientsets it
// replaces, the core client has a rate limiter of its own and the Flotilla groups share another.
func New(cfg *rest.Config) (*Clients, error) {
	if cfg == nil {
		return nil, fmt.Errorf("nodeclient: no REST config")
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("nodeclient: HTTP client: %w", err)
	}
	core, err := restClient(withLimiter(cfg), hc, "/api", corev1.SchemeGroupVersion, runtime.ContentTypeProtobuf)
	if err != nil {
		return nil, err
	}
	apps := withLimiter(cfg)
	alpha, err := restClient(apps, hc, "/apis", appsv1alpha1.SchemeGroupVersion, runtime.ContentTypeJSON)
	if err != nil {
		return nil, err
	}
	beta, err := restClient(apps, hc, "/apis", appsv1beta1.SchemeGroupVersion, runtime.ContentTypeJSON)
	if err != nil {
		return nil, err
	}
	return &Clients{Core: core, AppsV1alpha1: alpha, AppsV1beta1: beta}, nil
}

// withLimiter is a copy of cfg with a token bucket of its QPS and burst, as a generated clientset shares among
// its groups (none when cfg brings a limiter, or asks for none with QPS ≤ 0).
func withLimiter(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	if out.RateLimiter == nil && out.QPS > 0 {
		burst := out.Burst
		if burst <= 0 {
			burst = rest.DefaultBurst
		}
		out.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(out.QPS, burst)
	}
	return out
}

func restClient(cfg *rest.Config, hc *http.Client, apiPath string, gv schema.GroupVersion, contentType string) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath = apiPath
	c.GroupVersion = &gv
	c.NegotiatedSerializer = Codecs.WithoutConversion()
	c.ContentType = contentType
	c.AcceptContentTypes = contentType
	if contentType == runtime.ContentTypeProtobuf {
		c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("nodeclient: REST client of %s: %w", gv, err)
	}
	return rc, nil
}
