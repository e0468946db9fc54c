package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
)

// Observed is what the reconciler reads from one subset workload, whatever its kind.
type Observed struct {
	Kind       Kind
	Obj        metav1.Object // the cached object: read-only
	SubsetName string        // its apps.kruise.io/subset-name label
	// SpecReplicas and SpecPartition are what the workload is asked to run.
	SpecReplicas  int32
	SpecPartition int32
	// NoPartition: the workload has no partition to compare (a Deployment, an OnDelete StatefulSet).
	NoPartition bool
	// Replicas and ReadyReplicas are what the workload reports.
	Replicas      int32
	ReadyReplicas int32
	Selector      *metav1.LabelSelector
}

// Revision is the UnitedDeployment revision the workload was last written from.
func (o Observed) Revision() string {
	return o.Obj.GetLabels()[appsv1alpha1.UnitedDeploymentRevisionLabelKey]
}

// Patch is the subset patch the workload was last written with.
func (o Observed) Patch() string {
	return o.Obj.GetAnnotations()[appsv1alpha1.AnnotationSubsetPatchKey]
}

// workloads reads and writes the subset workloads of one kind.
type workloads interface {
	kind() Kind
	informer() cache.SharedIndexInformer
	// controlled returns the workloads whose controllerRef is ud.
	controlled(ud *appsv1alpha1.UnitedDeployment) ([]Observed, error)
	// cached reports whether the cache holds the named workload.
	cached(namespace, name string) bool
	create(ctx context.Context, d Desired) (metav1.Object, error)
	update(ctx context.Context, o Observed, d Desired) (metav1.Object, error)
	delete(ctx context.Context, o Observed) error
}

// typed implements workloads for one Go type.
type typed[T interface {
	metav1.Object
	comparable
}] struct {
	k       Kind
	inf     cache.SharedIndexInformer
	empty   func() T
	copyOf  func(T) T
	observe func(T) Observed
	build   func(Desired, T) error
	client  func(namespace string) writer[T]
}

// writer is the part of a typed clientset's namespaced client the reconciler uses.
type writer[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

func (w *typed[T]) kind() Kind                          { return w.k }
func (w *typed[T]) informer() cache.SharedIndexInformer { return w.inf }

func (w *typed[T]) controlled(ud *appsv1alpha1.UnitedDeployment) ([]Observed, error) {
	objs, err := kitcontroller.Controlled[T](w.inf.GetIndexer(), ud)
	if err != nil {
		return nil, fmt.Errorf("list %ss of %s/%s: %w", w.k, ud.Namespace, ud.Name, err)
	}
	out := make([]Observed, 0, len(objs))
	for _, o := range objs {
		if o.GetNamespace() != ud.Namespace {
			continue
		}
		ob := w.observe(o)
		ob.Kind, ob.Obj, ob.SubsetName = w.k, o, o.GetLabels()[appsv1alpha1.SubSetNameLabelKey]
		out = append(out, ob)
	}
	return out, nil
}

func (w *typed[T]) cached(namespace, name string) bool {
	_, ok, err := w.inf.GetIndexer().GetByKey(namespace + "/" + name)
	return ok && err == nil
}

func (w *typed[T]) create(ctx context.Context, d Desired) (metav1.Object, error) {
	obj := w.empty()
	if err := w.build(d, obj); err != nil {
		return nil, kitcontroller.Permanent(err) // a patch that cannot apply: only a spec change helps
	}
	out, err := w.client(d.UD.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	return out, permanentIfInvalid(err)
}

// permanentIfInvalid marks an error of the API server refusing the object as invalid (the template is wrong for
// the workload's API) as permanent: retrying cannot help, a change of the UnitedDeployment enqueues it again.
func permanentIfInvalid(err error) error {
	if apierrors.IsInvalid(err) {
		return kitcontroller.Permanent(err)
	}
	return err
}

func (w *typed[T]) update(ctx context.Context, o Observed, d Desired) (metav1.Object, error) {
	cur, ok := o.Obj.(T)
	if !ok {
		return nil, fmt.Errorf("%s %s: unexpected type %T", w.k, o.Obj.GetName(), o.Obj)
	}
	obj := w.copyOf(cur) // the cached object is read-only
	if err := w.build(d, obj); err != nil {
		return nil, kitcontroller.Permanent(err)
	}
	out, err := w.client(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{})
	return out, permanentIfInvalid(err)
}

func (w *typed[T]) delete(ctx context.Context, o Observed) error {
	// Background: the API server's garbage collector removes the workload's pods (or ReplicaSets) after it.
	return w.client(o.Obj.GetNamespace()).Delete(ctx, o.Obj.GetName(), metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: ptr.To(o.Obj.GetUID())},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
}

func newCloneSets(c versioned.Interface, inf cache.SharedIndexInformer) workloads {
	return &typed[*appsv1alpha1.CloneSet]{
		k: KindCloneSet, inf: inf,
		empty:  func() *appsv1alpha1.CloneSet { return &appsv1alpha1.CloneSet{} },
		copyOf: (*appsv1alpha1.CloneSet).DeepCopy,
		observe: func(cs *appsv1alpha1.CloneSet) Observed {
			replicas := ptr.Deref(cs.Spec.Replicas, 1)
			var partition int32
			if p := cs.Spec.UpdateStrategy.Partition; p != nil {
				v, _ := intstr.GetScaledValueFromIntOrPercent(p, int(replicas), true)
				partition = int32(v)
			}
			return Observed{SpecReplicas: replicas, SpecPartition: partition, Replicas: cs.Status.Replicas,
				ReadyReplicas: cs.Status.ReadyReplicas, Selector: cs.Spec.Selector}
		},
		build:  Desired.CloneSet,
		client: func(ns string) writer[*appsv1alpha1.CloneSet] { return c.AppsV1alpha1().CloneSets(ns) },
	}
}

func newAdvancedStatefulSets(c versioned.Interface, inf cache.SharedIndexInformer) workloads {
	return &typed[*appsv1beta1.StatefulSet]{
		k: KindAdvancedStatefulSet, inf: inf,
		empty:  func() *appsv1beta1.StatefulSet { return &appsv1beta1.StatefulSet{} },
		copyOf: (*appsv1beta1.StatefulSet).DeepCopy,
		observe: func(s *appsv1beta1.StatefulSet) Observed {
			var partition *int32
			if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
				partition = ru.Partition
			}
			return statefulObserved(s.Spec.Replicas, s.Spec.UpdateStrategy.Type, partition, s.Status.Replicas, s.Status.ReadyReplicas, s.Spec.Selector)
		},
		build:  Desired.AdvancedStatefulSet,
		client: func(ns string) writer[*appsv1beta1.StatefulSet] { return c.AppsV1beta1().StatefulSets(ns) },
	}
}

func newDeployments(k kubernetes.Interface, inf cache.SharedIndexInformer) workloads {
	return &typed[*appsv1.Deployment]{
		k: KindDeployment, inf: inf,
		empty:  func() *appsv1.Deployment { return &appsv1.Deployment{} },
		copyOf: (*appsv1.Deployment).DeepCopy,
		observe: func(d *appsv1.Deployment) Observed {
			return Observed{SpecReplicas: ptr.Deref(d.Spec.Replicas, 1), NoPartition: true, Replicas: d.Status.Replicas,
				ReadyReplicas: d.Status.ReadyReplicas, Selector: d.Spec.Selector}
		},
		build:  Desired.Deployment,
		client: func(ns string) writer[*appsv1.Deployment] { return k.AppsV1().Deployments(ns) },
	}
}

func newStatefulSets(k kubernetes.Interface, inf cache.SharedIndexInformer) workloads {
	return &typed[*appsv1.StatefulSet]{
		k: KindStatefulSet, inf: inf,
		empty:  func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} },
		copyOf: (*appsv1.StatefulSet).DeepCopy,
		observe: func(s *appsv1.StatefulSet) Observed {
			var partition *int32
			if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
				partition = ru.Partition
			}
			return statefulObserved(s.Spec.Replicas, s.Spec.UpdateStrategy.Type, partition, s.Status.Replicas, s.Status.ReadyReplicas, s.Spec.Selector)
		},
		build:  Desired.StatefulSet,
		client: func(ns string) writer[*appsv1.StatefulSet] { return k.AppsV1().StatefulSets(ns) },
	}
}

// statefulObserved is Observed for both StatefulSet kinds: the partition of RollingUpdate, none with OnDelete.
func statefulObserved(replicas *int32, t appsv1.StatefulSetUpdateStrategyType, partition *int32, statusReplicas, ready int32,
	selector *metav1.LabelSelector) Observed {
	return Observed{SpecReplicas: ptr.Deref(replicas, 1), SpecPartition: ptr.Deref(partition, 0),
		NoPartition: t == appsv1.OnDeleteStatefulSetStrategyType, Replicas: statusReplicas, ReadyReplicas: ready, Selector: selector}
}
