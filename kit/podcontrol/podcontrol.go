package podcontrol

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Verb names a pod write, as the Fake records it and Expectations hear it.
type Verb string

const (
	VerbCreate Verb = "create"
	VerbDelete Verb = "delete"
	VerbPatch  Verb = "patch"
)

// PodControl is every write a Flotilla controller makes to a pod. Patches
// carry only the difference between the cached pod and the desired one
// (PodPatch), guarded by the cached resourceVersion; deletes carry the
// pod's UID as a precondition; creates and deletes raise and lower the
// owner's expectations (Expectations) here, not at the call site.
type PodControl interface {
	// Create creates pod. exp (nil: none) is raised before the request and
	// told its outcome after it.
	Create(ctx context.Context, pod *corev1.Pod, exp Expectations) (*corev1.Pod, error)
	// Delete deletes pod, on condition that the pod of that name is still
	// the one with pod's UID. exp as for Create.
	Delete(ctx context.Context, pod *corev1.Pod, exp Expectations) error
	// Patch writes the difference between pod (as cached) and next (a
	// modified deep copy). When there is none it makes no request and
	// returns pod.
	Patch(ctx context.Context, pod, next *corev1.Pod) (*corev1.Pod, error)
	// PatchStatus is Patch on the status subresource.
	PatchStatus(ctx context.Context, pod, next *corev1.Pod) (*corev1.Pod, error)
	// DryRunPatch asks the API server whether Patch would be accepted
	// (admission, validation), changing nothing.
	DryRunPatch(ctx context.Context, pod, next *corev1.Pod) error
	// PatchBytes sends a patch the caller built itself (the lifecycle
	// state machine's, PodUnavailableBudget's annotation), for writes whose
	// patch is not a difference of two pods.
	PatchBytes(ctx context.Context, pod *corev1.Pod, pt types.PatchType, patch []byte, subresources ...string) (*corev1.Pod, error)
	// Adopt makes ref the pod's controller; Release removes the reference
	// to owner. Both are guarded by the pod's UID, so they fail rather than
	// touch a namesake; the API server rejects an adoption (Invalid) if
	// another controller adopted the pod first.
	Adopt(ctx context.Context, pod *corev1.Pod, ref metav1.OwnerReference) (*corev1.Pod, error)
	Release(ctx context.Context, pod *corev1.Pod, owner types.UID) (*corev1.Pod, error)
}

// Writer is the transport under PodControl: the API server or a test's record.
type Writer interface {
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error)
}

// NewFor returns the PodControl writing through w. The options of each
// request (the UID precondition of a delete, the dry run of DryRunPatch)
// are built here, so no Writer repeats them; kit/podcontrol/podclient.New
// is NewFor over client-go's clientset.
func NewFor(w Writer) PodControl { return control{w: server{w}} }

// transport is what control writes through: a Writer (server) or the
// Fake's record, which keeps the whole pod of a delete.
type transport interface {
	create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	delete(ctx context.Context, pod *corev1.Pod) error
	patch(ctx context.Context, pod *corev1.Pod, pt types.PatchType, data []byte, dryRun bool, subresources ...string) (*corev1.Pod, error)
}

// control is PodControl over a transport: the one place that diffs pods and
// keeps expectations, shared by the real implementation and the Fake.
type control struct{ w transport }

func (c control) Create(ctx context.Context, pod *corev1.Pod, exp Expectations) (*corev1.Pod, error) {
	if exp != nil {
		exp.Expect(VerbCreate, pod)
	}
	out, err := c.w.create(ctx, pod)
	if exp != nil {
		exp.Done(VerbCreate, pod, out, err)
	}
	return out, err
}

func (c control) Delete(ctx context.Context, pod *corev1.Pod, exp Expectations) error {
	if exp != nil {
		exp.Expect(VerbDelete, pod)
	}
	err := c.w.delete(ctx, pod)
	if exp != nil {
		exp.Done(VerbDelete, pod, nil, err)
	}
	return err
}

func (c control) Patch(ctx context.Context, pod, next *corev1.Pod) (*corev1.Pod, error) {
	return c.diff(ctx, pod, next, false)
}

func (c control) PatchStatus(ctx context.Context, pod, next *corev1.Pod) (*corev1.Pod, error) {
	return c.diff(ctx, pod, next, false, "status")
}

func (c control) DryRunPatch(ctx context.Context, pod, next *corev1.Pod) error {
	_, err := c.diff(ctx, pod, next, true)
	return err
}

func (c control) diff(ctx context.Context, pod, next *corev1.Pod, dryRun bool, subresources ...string) (*corev1.Pod, error) {
	patch, err := PodPatch(pod, next)
	if err != nil || patch == nil {
		return pod, err
	}
	return c.w.patch(ctx, pod, types.StrategicMergePatchType, patch, dryRun, subresources...)
}

func (c control) PatchBytes(ctx context.Context, pod *corev1.Pod, pt types.PatchType, patch []byte, subresources ...string) (*corev1.Pod, error) {
	return c.w.patch(ctx, pod, pt, patch, false, subresources...)
}

func (c control) Adopt(ctx context.Context, pod *corev1.Pod, ref metav1.OwnerReference) (*corev1.Pod, error) {
	patch, err := adoptPatch(pod.UID, ref)
	if err != nil {
		return nil, err
	}
	return c.w.patch(ctx, pod, types.StrategicMergePatchType, patch, false)
}

func (c control) Release(ctx context.Context, pod *corev1.Pod, owner types.UID) (*corev1.Pod, error) {
	return c.w.patch(ctx, pod, types.StrategicMergePatchType, releasePatch(pod.UID, owner), false)
}

// server is the transport over a Writer: the request options of the house
// rules, built once for every Writer.
type server struct{ w Writer }

func (s server) create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return s.w.Create(ctx, pod, metav1.CreateOptions{})
}

func (s server) delete(ctx context.Context, pod *corev1.Pod) error {
	return s.w.Delete(ctx, pod.Namespace, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
}

func (s server) patch(ctx context.Context, pod *corev1.Pod, pt types.PatchType, data []byte, dryRun bool, subresources ...string) (*corev1.Pod, error) {
	opts := metav1.PatchOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	// Errors are returned as the API server gave them: callers test them
	// (Conflict, NotFound) and report them in events.
	return s.w.Patch(ctx, pod.Namespace, pod.Name, pt, data, opts, subresources...)
}
