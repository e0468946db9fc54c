// Package workload finds the workload behind a PodUnavailableBudget's
// targetRef or behind a pod's controllerRef, generically: its identity,
// replicas and selector from its /scale subresource, so any kind with a scale subresource works (CloneSet,
// Advanced StatefulSet, apps/v1 Deployment and StatefulSet, a user CRD).
// A ReplicaSet controlled by a Deployment resolves to the Deployment, as
// OpenKruise's controller finder does.
package workload

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
)

// Workload is what a budget needs of a workload.
type Workload struct {
	APIVersion, Kind, Name string
	UID                    types.UID
	Replicas               int32
	// Selector is the /scale status selector (may be empty when the
	// workload's controller has not published it).
	Selector labels.Selector
	// Terminating: deletionTimestamp set (as far as /scale reports it).
	Terminating bool
}

// Finder resolves workloads. Safe for concurrent use.
type Finder interface {
	// Get returns the workload apiVersion/kind ns/name, nil if it does not
	// exist (or its kind is not served).
	Get(ctx context.Context, apiVersion, kind, ns, name string) (*Workload, error)
	// TopLevel returns the workload controlling a pod through ref: ref's
	// object, or the Deployment controlling it when ref is a ReplicaSet.
	TopLevel(ctx context.Context, ref *metav1.OwnerReference, ns string) (*Workload, error)
}

type finder struct {
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	meta    metadata.Interface
	scales  scale.ScalesGetter
	resetMu sync.Mutex
}

// New builds a Finder from a REST config.
func New(cfg *rest.Config) (Finder, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	sc, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cached))
	if err != nil {
		return nil, fmt.Errorf("scale client: %w", err)
	}
	return &finder{mapper: mapper, meta: mc, scales: sc}, nil
}

func (f *finder) mapping(apiVersion, kind string) (*meta.RESTMapping, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	m, err := f.mapper.RESTMapping(gk, gv.Version)
	if meta.IsNoMatchError(err) {
		// A CRD installed after start: forget discovery once and retry.
		f.resetMu.Lock()
		f.mapper.Reset()
		f.resetMu.Unlock()
		m, err = f.mapper.RESTMapping(gk, gv.Version)
	}
	return m, err
}

func (f *finder) Get(ctx context.Context, apiVersion, kind, ns, name string) (*Workload, error) {
	m, err := f.mapping(apiVersion, kind)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("map %s %s: %w", apiVersion, kind, err)
	}
	// The scale subresource carries the workload's uid: one GET, and RBAC
	// needs only get on */scale (plus replicasets for Deployments).
	s, err := f.scales.Scales(ns).Get(ctx, m.Resource.GroupResource(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s/%s scale: %w", kind, ns, name, err)
	}
	w := &Workload{APIVersion: apiVersion, Kind: kind, Name: name, UID: s.UID, Terminating: s.DeletionTimestamp != nil, Selector: labels.Nothing()}
	w.Replicas = s.Spec.Replicas
	if s.Status.Selector != "" {
		sel, err := labels.Parse(s.Status.Selector)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s scale selector %q: %w", kind, ns, name, s.Status.Selector, err)
		}
		w.Selector = sel
	}
	return w, nil
}

func (f *finder) TopLevel(ctx context.Context, ref *metav1.OwnerReference, ns string) (*Workload, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("owner apiVersion %q: %w", ref.APIVersion, err)
	}
	if gv.Group == "apps" && ref.Kind == "ReplicaSet" {
		rs, err := f.meta.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}).
			Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("get ReplicaSet %s/%s: %w", ns, ref.Name, err)
		}
		if owner := metav1.GetControllerOfNoCopy(rs); owner != nil && owner.Kind == "Deployment" {
			return f.Get(ctx, owner.APIVersion, owner.Kind, ns, owner.Name)
		}
	}
	w, err := f.Get(ctx, ref.APIVersion, ref.Kind, ns, ref.Name)
	if w != nil && w.UID != ref.UID {
		return nil, nil // a namesake replaced the owner
	}
	return w, err
}
