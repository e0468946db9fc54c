package podcontrol

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/kit/expectations"
)

var owner = types.NamespacedName{Namespace: "ns", Name: "web"}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7",
			Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}},
	}
}

func pending(e *expectations.Scale[types.NamespacedName], a expectations.Action) []string {
	return append([]string{}, e.Pending(owner, a)...)
}

// TestScaleExpectations: the owner's expectation is up while the request
// is in flight and stays up after a success (the cache lowers it), and a
// failure lowers it at once except a delete answered NotFound.
func TestScaleExpectations(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "a")
	boom := errors.New("boom")
	for _, tc := range []struct {
		name        string
		verb        Verb
		err         error
		lowerNF     bool
		wantPending []string
	}{
		{"create ok", VerbCreate, nil, false, []string{"a"}},
		{"create failed", VerbCreate, boom, false, []string{}},
		{"create already exists", VerbCreate, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, "a"), false, []string{}},
		{"delete ok", VerbDelete, nil, false, []string{"a"}},
		{"delete failed", VerbDelete, boom, false, []string{}},
		{"delete not found", VerbDelete, notFound, false, []string{"a"}},
		{"delete not found, lowered", VerbDelete, notFound, true, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := expectations.NewScale[types.NamespacedName]()
			f := NewFake()
			var during []string
			f.Err = func(a Action) error {
				during = pending(exp, map[Verb]expectations.Action{VerbCreate: expectations.Create, VerbDelete: expectations.Delete}[a.Verb])
				return tc.err
			}
			se := Scale(exp, owner)
			se.LowerDeleteNotFound = tc.lowerNF
			var err error
			action := expectations.Create
			if tc.verb == VerbCreate {
				_, err = f.Create(context.Background(), pod("a"), se)
			} else {
				action = expectations.Delete
				err = f.Delete(context.Background(), pod("a"), se)
			}
			assert.Equal(t, tc.err, err)
			assert.Equal(t, []string{"a"}, during, "raised before the request")
			assert.Equal(t, tc.wantPending, pending(exp, action))
		})
	}
}

// TestNodeExpectations: a node is blocked from before the create; a
// generated name replaces the unknown one once the response gives it; the
// policy decides which failures unblock it at once.
func TestNodeExpectations(t *testing.T) {
	none := func(string) bool { return false }
	exists := apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, "a")
	timeout := apierrors.NewTimeoutError("slow", 1)
	for _, tc := range []struct {
		name      string
		named     bool
		err       error
		lowered   func(error) bool
		wantNode  bool
		cacheName string // a pod of this name in the cache releases the node
	}{
		{"named ok", true, nil, nil, true, "a"},
		{"generated ok", false, nil, nil, true, "gen-00001"},
		{"named already exists stays", true, exists, nil, true, "a"},
		{"named timeout lowered (default)", true, timeout, nil, false, ""},
		{"generated timeout kept (Rejected)", false, timeout, Rejected, true, ""},
		{"generated already exists lowered (Rejected)", false, exists, Rejected, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := expectations.NewNode[types.NamespacedName]()
			f := NewFake()
			f.Err = func(Action) error { return tc.err }
			p := pod("a")
			if !tc.named {
				p.Name, p.GenerateName = "", "gen-"
			}
			_, err := f.Create(context.Background(), p, NodeExpectations[types.NamespacedName]{Exp: exp, Key: owner, UID: "u", Node: "n1", Lowered: tc.lowered})
			assert.Equal(t, tc.err, err)
			nodes, _ := exp.Pending(owner, "u", none)
			assert.Equal(t, tc.wantNode, nodes.Has("n1"))
			if tc.cacheName != "" {
				nodes, _ = exp.Pending(owner, "u", func(n string) bool { return n == tc.cacheName })
				assert.False(t, nodes.Has("n1"), "the pod in the cache releases the node")
			}
		})
	}
}

// TestFakeRecords: the Fake records verb, namespace, name, patch bytes and
// created pod, and answers patches with the patched pod.
func TestFakeRecords(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	a := pod("a")
	next := a.DeepCopy()
	next.Labels["x"] = "y"
	out, err := f.Patch(ctx, a, next)
	require.NoError(t, err)
	assert.Equal(t, "y", out.Labels["x"])
	_, err = f.Patch(ctx, a, a.DeepCopy())
	require.NoError(t, err)
	gen := pod("")
	gen.GenerateName = "web-"
	created, err := f.Create(ctx, gen, nil)
	require.NoError(t, err)
	assert.Equal(t, "web-00002", created.Name)
	assert.NotEmpty(t, created.UID)
	require.NoError(t, f.Delete(ctx, a, nil))

	acts := f.Actions()
	require.Len(t, acts, 3, "an unchanged pod is not written")
	assert.Equal(t, Action{Verb: VerbPatch, Namespace: "ns", Name: "a", PatchType: types.StrategicMergePatchType,
		Patch: []byte(`{"metadata":{"labels":{"x":"y"},"resourceVersion":"7"}}`)}, acts[0])
	assert.Equal(t, VerbCreate, acts[1].Verb)
	assert.Equal(t, gen, acts[1].Pod)
	assert.Equal(t, Action{Verb: VerbDelete, Namespace: "ns", Name: "a", Pod: a}, acts[2])
	assert.Equal(t, `patch ns/a {"metadata":{"labels":{"x":"y"},"resourceVersion":"7"}}`, acts[0].String())
	f.ClearActions()
	assert.Empty(t, f.Actions())
}

// recorder is a Writer that records each request with its options, as a
// transport under NewFor would receive it.
type recorder struct {
	calls []string
	opts  []any
	err   error
}

func (r *recorder) Create(_ context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	r.calls = append(r.calls, "create "+pod.Namespace+"/"+pod.Name)
	r.opts = append(r.opts, opts)
	return pod, r.err
}

func (r *recorder) Delete(_ context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	r.calls = append(r.calls, "delete "+namespace+"/"+name)
	r.opts = append(r.opts, opts)
	return r.err
}

func (r *recorder) Patch(_ context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error) {
	r.calls = append(r.calls, fmt.Sprintf("patch %s/%s%v %s %s", namespace, name, subresources, pt, data))
	r.opts = append(r.opts, opts)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, r.err
}

// TestNewFor: PodControl over a Writer builds every request's options
// itself (the UID precondition of a delete, the dry run of DryRunPatch, none
// otherwise), sends only differences and no request for an unchanged pod,
// and returns the Writer's errors as they are.
func TestNewFor(t *testing.T) {
	ctx := context.Background()
	w := &recorder{}
	pc := NewFor(w)
	a := pod("a")
	next := a.DeepCopy()
	next.Labels["x"] = "y"

	_, err := pc.Create(ctx, pod("c"), nil)
	require.NoError(t, err)
	require.NoError(t, pc.Delete(ctx, a, nil))
	_, err = pc.Patch(ctx, a, next)
	require.NoError(t, err)
	_, err = pc.Patch(ctx, a, a.DeepCopy())
	require.NoError(t, err)
	require.NoError(t, pc.DryRunPatch(ctx, a, next))
	_, err = pc.PatchStatus(ctx, a, next)
	require.NoError(t, err)
	_, err = pc.PatchBytes(ctx, a, types.MergePatchType, []byte(`{"metadata":{"annotations":{"k":"v"}}}`), "status")
	require.NoError(t, err)

	const diff = `{"metadata":{"labels":{"x":"y"},"resourceVersion":"7"}}`
	assert.Equal(t, []string{
		"create ns/c",
		"delete ns/a",
		"patch ns/a[] application/strategic-merge-patch+json " + diff,
		"patch ns/a[] application/strategic-merge-patch+json " + diff,
		"patch ns/a[status] application/strategic-merge-patch+json " + diff,
		`patch ns/a[status] application/merge-patch+json {"metadata":{"annotations":{"k":"v"}}}`,
	}, w.calls, "no request for an unchanged pod")
	assert.Equal(t, []any{
		metav1.CreateOptions{},
		metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions("uid-a")},
		metav1.PatchOptions{},
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}},
		metav1.PatchOptions{},
		metav1.PatchOptions{},
	}, w.opts)

	w.err = apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "a", errors.New("stale"))
	_, err = pc.Patch(ctx, a, next)
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	exp := expectations.NewScale[types.NamespacedName]()
	err = pc.Delete(ctx, a, Scale(exp, owner))
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Empty(t, pending(exp, expectations.Delete), "a failed delete lowers the expectation")
}
