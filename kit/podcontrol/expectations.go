package podcontrol

import (
	"errors"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// Expectations is an owner's record of the creates and deletes it waits
// to see in its cache (kit/expectations). PodControl raises it just before
// a request (Expect) and tells it the outcome (Done: out is the created
// pod, nil on failure), so a write and its expectation can never drift
// apart. Which failures lower an expectation at once is the adapter's
// policy: a request that certainly changed nothing will never be observed.
type Expectations interface {
	Expect(v Verb, pod *corev1.Pod)
	Done(v Verb, pod, out *corev1.Pod, err error)
}

// ScaleExpectations keys an owner's creates and deletes by pod name
// (CloneSet, Advanced StatefulSet, Advanced DaemonSet's deletes).
type ScaleExpectations[K comparable] struct {
	Exp *expectations.Scale[K]
	Key K
	// LowerDeleteNotFound lowers the expectation of a delete answered
	// NotFound at once; false leaves it for the pod's delete event.
	LowerDeleteNotFound bool
}

// Scale returns the name-keyed expectations of key: a failed create is
// lowered at once, a failed delete too unless NotFound (the pod is gone:
// its delete event lowers it).
func Scale[K comparable](exp *expectations.Scale[K], key K) ScaleExpectations[K] {
	return ScaleExpectations[K]{Exp: exp, Key: key}
}

func (s ScaleExpectations[K]) Expect(v Verb, pod *corev1.Pod) {
	if a, ok := scaleAction(v); ok {
		s.Exp.Expect(s.Key, a, pod.Name)
	}
}

func (s ScaleExpectations[K]) Done(v Verb, pod, _ *corev1.Pod, err error) {
	a, ok := scaleAction(v)
	if !ok || err == nil {
		return
	}
	if v == VerbDelete && apierrors.IsNotFound(err) && !s.LowerDeleteNotFound {
		return
	}
	s.Exp.Observe(s.Key, a, pod.Name)
}

func scaleAction(v Verb) (expectations.Action, bool) {
	switch v {
	case VerbCreate:
		return expectations.Create, true
	case VerbDelete:
		return expectations.Delete, true
	}
	return 0, false
}

// NodeExpectations keys an owner's creates by node, one pod per node
// (BroadcastJob, Advanced DaemonSet). A pod created under a generateName
// is expected by node alone until the response names it.
type NodeExpectations[K comparable] struct {
	Exp  *expectations.Node[K]
	Key  K
	UID  types.UID
	Node string
	// Lowered says whether a failed create created nothing, so its
	// expectation is lowered at once; nil: every failure but AlreadyExists
	// (a pod of that name exists: the cache shows it, which releases the
	// node).
	Lowered func(error) bool
}

func (n NodeExpectations[K]) Expect(v Verb, pod *corev1.Pod) {
	if v == VerbCreate {
		n.Exp.Expect(n.Key, n.UID, n.Node, pod.Name)
	}
}

func (n NodeExpectations[K]) Done(v Verb, pod, out *corev1.Pod, err error) {
	if v != VerbCreate {
		return
	}
	switch {
	case err == nil:
		if pod.Name == "" && out != nil {
			n.Exp.Expect(n.Key, n.UID, n.Node, out.Name)
		}
	case n.Lowered == nil && !apierrors.IsAlreadyExists(err), n.Lowered != nil && n.Lowered(err):
		n.Exp.Observed(n.Key, n.Node, pod.Name)
	}
}

// Rejected reports whether the API server answered a request with a
// definite refusal (4xx other than timeouts and throttling), i.e. nothing
// was written; after a timeout or a 5xx the write may have happened.
func Rejected(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := int(status.Status().Code)
	return code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}
