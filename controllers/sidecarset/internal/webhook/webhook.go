// Package webhook holds SidecarSet's admission handlers, served by
// kit/webhook on every replica: sidecar injection into pods at creation
// (/mutate-pod) and the SidecarSet rules that need other objects
// (/validate-sidecarset). The scope of the pod webhook (PodScope) is kept by
// the leader in the MutatingWebhookConfiguration's match conditions, so the
// API server calls it only for pods some SidecarSet could select.
package webhook

import (
	"context"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Paths and names of the webhooks, as in deploy/components/sidecarset.
const (
	PodPath        = "/mutate-pod"
	SidecarSetPath = "/validate-sidecarset"
	// ConfigName names both the Mutating- and the
	// ValidatingWebhookConfiguration.
	ConfigName = "flotilla-sidecarset"
	// PodWebhookName is the pod entry; the API server names it in its
	// errors ("failed calling webhook ...") when the webhook is down.
	PodWebhookName = "sidecar-injection.pods.sidecarset.flotilla.dev"
)

// Refs are the binary's own webhook configurations.
func Refs() []kitwebhook.ConfigRef {
	return []kitwebhook.ConfigRef{{Kind: kitwebhook.Mutating, Name: ConfigName}, {Kind: kitwebhook.Validating, Name: ConfigName}}
}

// InjectFunc computes the injected pod (sidecarcontrol.Inject).
type InjectFunc func(pod *corev1.Pod, matched []*appsv1alpha1.SidecarSet, revs sidecarcontrol.RevisionSource, opts sidecarcontrol.Options) (*corev1.Pod, []string, error)

// Handlers are the SidecarSet admission handlers over caches every replica
// keeps (SidecarSets, Namespaces, the controller namespace's revisions and
// kruise-configuration ConfigMap).
type Handlers struct {
	Sets       appslisters.SidecarSetLister
	Namespaces corelisters.NamespaceLister
	// Kube reads a Namespace the cache does not hold yet (created a moment
	// before its first pod).
	Kube       kubernetes.Interface
	Revisions  sidecarcontrol.RevisionSource
	ConfigMaps corelisters.ConfigMapLister
	// SystemNamespace is the controller's namespace.
	SystemNamespace string
	Gates           featuregate.FeatureGate
	Clock           clock.PassiveClock
	// Inject defaults to sidecarcontrol.Inject.
	Inject InjectFunc
}

// Register serves both handlers on s.
func (h *Handlers) Register(s *kitwebhook.Server) {
	s.Register(PodPath, "sidecarset-inject-pod", kitwebhook.HandlerFunc(h.MutatePod))
	h.RegisterValidation(s)
}

// RegisterValidation serves only the SidecarSet validation (PodWebhook off).
func (h *Handlers) RegisterValidation(s *kitwebhook.Server) {
	s.Register(SidecarSetPath, "sidecarset-validate", kitwebhook.HandlerFunc(h.ValidateSidecarSet))
}

// MutatePod injects the matching SidecarSets' sidecars into a pod being
// created. A pod no SidecarSet selects is allowed unchanged; a pod the
// injection cannot be computed for (a pinned revision that does not exist,
// conflicting SidecarSets) is denied with the reason.
func (h *Handlers) MutatePod(ctx context.Context, req kitwebhook.Request) kitwebhook.Response {
	pod, resp, ok := kitwebhook.PodCreation(req)
	if !ok {
		return resp
	}
	all, err := h.Sets.List(labels.Everything())
	if err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, fmt.Errorf("list sidecarsets: %w", err))
	}
	nsLabels, err := h.namespaceLabels(ctx, pod.Namespace, all)
	if err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, err)
	}
	matched, err := sidecarcontrol.Select(pod, nsLabels, all)
	if err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, err)
	}
	if len(matched) == 0 {
		return kitwebhook.Allowed()
	}
	whitelist, err := h.whitelist()
	if err != nil {
		// Like a whitelist that forbids everything: injection goes on, each
		// patchPodMetadata is skipped with a warning.
		klog.FromContext(ctx).Error(err, "Cannot read the patchPodMetadata whitelist")
	}
	inject := h.Inject
	if inject == nil {
		inject = sidecarcontrol.Inject
	}
	gates := h.gates()
	out, warnings, err := inject(pod, matched, h.Revisions, sidecarcontrol.Options{
		Now:                          h.now(),
		SortByName:                   gates.Enabled(features.EnableSortSidecarContainerByName),
		Whitelist:                    whitelist,
		PatchMetadataDefaultsAllowed: gates.Enabled(features.SidecarSetPatchPodMetadataDefaultsAllowed),
	})
	if err != nil {
		return kitwebhook.Denied("sidecar injection: %v", err)
	}
	klog.FromContext(ctx).V(2).Info("Injecting sidecars", "pod", klog.KObj(pod), "sidecarSets", names(matched))
	return kitwebhook.Patched(req.Object.Raw, out, warnings...)
}

// namespaceLabels returns the labels of ns when some SidecarSet has a
// namespaceSelector (nil otherwise: nothing reads them).
func (h *Handlers) namespaceLabels(ctx context.Context, ns string, all []*appsv1alpha1.SidecarSet) (map[string]string, error) {
	need := false
	for _, s := range all {
		if s.Spec.NamespaceSelector != nil {
			need = true
			break
		}
	}
	if !need {
		return nil, nil
	}
	n, err := h.Namespaces.Get(ns)
	if apierrors.IsNotFound(err) && h.Kube != nil {
		n, err = h.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	return n.Labels, nil
}

func (h *Handlers) whitelist() (*sidecarcontrol.Whitelist, error) {
	if h.ConfigMaps == nil {
		return nil, nil
	}
	return sidecarcontrol.ReadWhitelist(h.ConfigMaps, h.SystemNamespace)
}

// ValidateSidecarSet rejects a SidecarSet create or update that breaks a
// rule needing other objects (Validate), naming the field.
func (h *Handlers) ValidateSidecarSet(_ context.Context, req kitwebhook.Request) kitwebhook.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return kitwebhook.Allowed()
	}
	var set appsv1alpha1.SidecarSet
	if err := req.DecodeObject(&set); err != nil {
		return kitwebhook.Errored(http.StatusBadRequest, err)
	}
	var old *appsv1alpha1.SidecarSet
	if req.Operation == admissionv1.Update {
		old = &appsv1alpha1.SidecarSet{}
		if err := req.DecodeOldObject(old); err != nil {
			return kitwebhook.Errored(http.StatusBadRequest, err)
		}
		if set.DeletionTimestamp != nil {
			return kitwebhook.Allowed() // finalizers being removed: never block a deletion
		}
	}
	others, err := h.Sets.List(labels.Everything())
	if err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, fmt.Errorf("list sidecarsets: %w", err))
	}
	if errs := Validate(&set, old, others, h.Revisions); len(errs) > 0 {
		return kitwebhook.Invalid(apierrors.NewInvalid(appsv1alpha1.SchemeGroupVersion.WithKind("SidecarSet").GroupKind(), set.Name, errs).Error())
	}
	return kitwebhook.Allowed()
}

func (h *Handlers) gates() featuregate.FeatureGate {
	if h.Gates == nil {
		return features.MustNewGate(features.EnableSortSidecarContainerByName, features.SidecarSetPatchPodMetadataDefaultsAllowed)
	}
	return h.Gates
}

func (h *Handlers) now() time.Time {
	if h.Clock == nil {
		return time.Now()
	}
	return h.Clock.Now()
}

func names(sets []*appsv1alpha1.SidecarSet) []string {
	out := make([]string, len(sets))
	for i, s := range sets {
		out[i] = s.Name
	}
	return out
}
