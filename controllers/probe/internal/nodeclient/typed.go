package nodeclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
)

// NodePodProbes writes the status of NodePodProbes (cluster-scoped).
type NodePodProbes struct{ client rest.Interface }

// NodePodProbes returns the NodePodProbe client.
func (c *Clients) NodePodProbes() NodePodProbes { return NodePodProbes{c.AppsV1alpha1} }

// UpdateStatus replaces npp's status (guarded by its resourceVersion) and returns the object written.
func (n NodePodProbes) UpdateStatus(ctx context.Context, npp *appsv1alpha1.NodePodProbe, opts metav1.UpdateOptions) (*appsv1alpha1.NodePodProbe, error) {
	return updateStatus(ctx, n.client, "", "nodepodprobes", npp, &appsv1alpha1.NodePodProbe{}, opts)
}

// ContainerRecreateRequests writes the status of the ContainerRecreateRequests of one namespace.
type ContainerRecreateRequests struct {
	client    rest.Interface
	namespace string
}

// ContainerRecreateRequests returns the ContainerRecreateRequest client of namespace.
func (c *Clients) ContainerRecreateRequests(namespace string) ContainerRecreateRequests {
	return ContainerRecreateRequests{c.AppsV1alpha1, namespace}
}

// UpdateStatus replaces crr's status (guarded by its resourceVersion) and returns the object written.
func (r ContainerRecreateRequests) UpdateStatus(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, opts metav1.UpdateOptions) (*appsv1alpha1.ContainerRecreateRequest, error) {
	return updateStatus(ctx, r.client, r.namespace, "containerrecreaterequests", crr, &appsv1alpha1.ContainerRecreateRequest{}, opts)
}

// NodeImages writes the status of (v1beta1) NodeImages (cluster-scoped).
type NodeImages struct{ client rest.Interface }

var _ controller.StatusUpdater[*appsv1beta1.NodeImage] = NodeImages{}

// NodeImages returns the NodeImage client.
func (c *Clients) NodeImages() NodeImages { return NodeImages{c.AppsV1beta1} }

// UpdateStatus replaces ni's status (guarded by its resourceVersion) and returns the object written.
func (n NodeImages) UpdateStatus(ctx context.Context, ni *appsv1beta1.NodeImage, opts metav1.UpdateOptions) (*appsv1beta1.NodeImage, error) {
	return updateStatus(ctx, n.client, "", "nodeimages", ni, &appsv1beta1.NodeImage{}, opts)
}

// updateStatus PUTs obj's status subresource (namespace "" for a
// cluster-scoped kind) and decodes the object written into out.
func updateStatus[T interface {
	runtime.Object
	GetName() string
}](ctx context.Context, c rest.Interface, namespace, resource string, obj, out T, opts metav1.UpdateOptions) (T, error) {
	if err := c.Put().NamespaceIfScoped(namespace, namespace != "").Resource(resource).Name(obj.GetName()).SubResource("status").
		VersionedParams(&opts, ParameterCodec).Body(obj).Do(ctx).Into(out); err != nil {
		var none T
		return none, err
	}
	return out, nil
}

// Secrets reads the Secrets of one namespace.
type Secrets struct {
	client    rest.Interface
	namespace string
}

// Secrets returns the Secret client of namespace.
func (c *Clients) Secrets(namespace string) Secrets { return Secrets{c.Core, namespace} }

// Get reads Secret name.
func (s Secrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	out := &corev1.Secret{}
	if err := s.client.Get().Namespace(s.namespace).Resource("secrets").Name(name).
		VersionedParams(&opts, ParameterCodec).Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Pods writes pods, in any namespace: kit/podcontrol's Writer, for podcontrol.NewFor.
type Pods struct{ client rest.Interface }

var _ podcontrol.Writer = Pods{}

// Pods returns the pod writer.
func (c *Clients) Pods() Pods { return Pods{c.Core} }

// Create creates pod in its namespace.
func (p Pods) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	if err := p.client.Post().Namespace(pod.Namespace).Resource("pods").
		VersionedParams(&opts, ParameterCodec).Body(pod).Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Delete deletes pod namespace/name (opts carry the preconditions, e.g. the UID).
func (p Pods) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	return p.client.Delete().Namespace(namespace).Resource("pods").Name(name).Body(&opts).Do(ctx).Error()
}

// Patch patches pod namespace/name (or its subresources, e.g. "status") with data of type pt.
func (p Pods) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	if err := p.client.Patch(pt).Namespace(namespace).Resource("pods").Name(name).SubResource(subresources...).
		VersionedParams(&opts, ParameterCodec).Body(data).Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}
