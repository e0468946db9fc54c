// Package workload reads what WorkloadSpread needs of its target: the
// object (UID, replicas) from the informer caches the reconciler keeps
// (Listers) or from the API (Client, the webhook's rare reads), and the
// pods it controls through the pod owner index.
package workload

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	appslistersv1 "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	kruiselisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kruisebeta "github.com/flotilla-dev/flotilla/client/listers/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Kind is a supported target kind by group.
type Kind struct{ Group, Kind string }

// KindOf is the target's group and kind.
func KindOf(t *appsv1alpha1.TargetReference) Kind {
	gv, _ := schema.ParseGroupVersion(t.APIVersion)
	return Kind{Group: gv.Group, Kind: t.Kind}
}

// Replicas is the number of pods a workload object asks for: spec.replicas
// (1 when unset), a Job's parallelism.
func Replicas(obj metav1.Object) int32 {
	var r *int32
	switch o := obj.(type) {
	case *appsv1.Deployment:
		r = o.Spec.Replicas
	case *appsv1.ReplicaSet:
		r = o.Spec.Replicas
	case *appsv1.StatefulSet:
		r = o.Spec.Replicas
	case *batchv1.Job:
		r = o.Spec.Parallelism
	case *appsv1alpha1.CloneSet:
		r = o.Spec.Replicas
	case *appsv1beta1.StatefulSet:
		r = o.Spec.Replicas
	}
	if r == nil {
		return 1
	}
	return *r
}

// Getter returns the target object, (nil, nil) when it does not exist.
type Getter interface {
	Get(ctx context.Context, ns string, t *appsv1alpha1.TargetReference) (metav1.Object, error)
}

// Listers reads targets from the reconciler's caches.
type Listers struct {
	Deployments  appslistersv1.DeploymentLister
	ReplicaSets  appslistersv1.ReplicaSetLister
	StatefulSets appslistersv1.StatefulSetLister
	Jobs         batchlisters.JobLister
	CloneSets    kruiselisters.CloneSetLister
	Advanced     kruisebeta.StatefulSetLister
}

// Get implements Getter.
func (l Listers) Get(_ context.Context, ns string, t *appsv1alpha1.TargetReference) (metav1.Object, error) {
	var obj metav1.Object
	var err error
	switch KindOf(t) {
	case Kind{"apps", "Deployment"}:
		obj, err = l.Deployments.Deployments(ns).Get(t.Name)
	case Kind{"apps", "ReplicaSet"}:
		obj, err = l.ReplicaSets.ReplicaSets(ns).Get(t.Name)
	case Kind{"apps", "StatefulSet"}:
		obj, err = l.StatefulSets.StatefulSets(ns).Get(t.Name)
	case Kind{"batch", "Job"}:
		obj, err = l.Jobs.Jobs(ns).Get(t.Name)
	case Kind{"apps.kruise.io", "CloneSet"}:
		obj, err = l.CloneSets.CloneSets(ns).Get(t.Name)
	case Kind{"apps.kruise.io", "StatefulSet"}:
		obj, err = l.Advanced.StatefulSets(ns).Get(t.Name)
	default:
		return nil, nil
	}
	return found(obj, err, t)
}

// Client reads targets from the API server.
type Client struct {
	Kube   kubernetes.Interface
	Kruise versioned.Interface
}

// Get implements Getter.
func (c Client) Get(ctx context.Context, ns string, t *appsv1alpha1.TargetReference) (metav1.Object, error) {
	var obj metav1.Object
	var err error
	o := metav1.GetOptions{}
	switch KindOf(t) {
	case Kind{"apps", "Deployment"}:
		obj, err = c.Kube.AppsV1().Deployments(ns).Get(ctx, t.Name, o)
	case Kind{"apps", "ReplicaSet"}:
		obj, err = c.Kube.AppsV1().ReplicaSets(ns).Get(ctx, t.Name, o)
	case Kind{"apps", "StatefulSet"}:
		obj, err = c.Kube.AppsV1().StatefulSets(ns).Get(ctx, t.Name, o)
	case Kind{"batch", "Job"}:
		obj, err = c.Kube.BatchV1().Jobs(ns).Get(ctx, t.Name, o)
	case Kind{"apps.kruise.io", "CloneSet"}:
		obj, err = c.Kruise.AppsV1alpha1().CloneSets(ns).Get(ctx, t.Name, o)
	case Kind{"apps.kruise.io", "StatefulSet"}:
		obj, err = c.Kruise.AppsV1beta1().StatefulSets(ns).Get(ctx, t.Name, o)
	default:
		return nil, nil
	}
	return found(obj, err, t)
}

func found(obj metav1.Object, err error, t *appsv1alpha1.TargetReference) (metav1.Object, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", t.Kind, t.Name, err)
	}
	return obj, nil
}

// Pods returns the pods the target controls: by the pod owner index,
// through the target's ReplicaSets for a Deployment (rsIndex: the
// ReplicaSet informer's owner index).
func Pods(pods, rsIndex cache.Indexer, t *appsv1alpha1.TargetReference, obj metav1.Object) ([]*corev1.Pod, error) {
	owners := []metav1.Object{obj}
	if KindOf(t) == (Kind{"apps", "Deployment"}) {
		rss, err := controller.Controlled[*appsv1.ReplicaSet](rsIndex, obj)
		if err != nil {
			return nil, fmt.Errorf("replicasets of deployment %s: %w", obj.GetName(), err)
		}
		owners = owners[:0]
		for _, rs := range rss {
			owners = append(owners, rs)
		}
	}
	var out []*corev1.Pod
	for _, o := range owners {
		ps, err := controller.Controlled[*corev1.Pod](pods, o)
		if err != nil {
			return nil, fmt.Errorf("pods of %s: %w", o.GetName(), err)
		}
		out = append(out, ps...)
	}
	return out, nil
}
