// Package wiringtest builds the Deps of a reconciler over fake clientsets for fixture-and-actions tests of its sync
// (sample-controller style): the informers are never started, the test puts objects in their caches, runs sync once
// and asserts on the writes the fake clientsets recorded. Every controller's sync fixture is built the same way
// from it, instead of each writing the same thirty lines.
package wiringtest

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	flotillafake "github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillascheme "github.com/flotilla-dev/flotilla/client/clientset/versioned/scheme"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Fakes are a fixture's clients: fake clientsets seeded with the fixture's objects, their informer factories, a fake
// clock and an event recorder.
type Fakes struct {
	t             testing.TB
	Kube          *kubefake.Clientset
	Client        *flotillafake.Clientset
	KubeInformers informers.SharedInformerFactory
	Informers     flotillainformers.SharedInformerFactory
	Clock         *clocktesting.FakeClock
	Recorder      *record.FakeRecorder
}

// New returns Fakes at now whose clientsets hold objs: Flotilla's kinds in Client, the others in Kube.
func New(t testing.TB, now time.Time, objs ...runtime.Object) *Fakes {
	t.Helper()
	var kube, flotilla []runtime.Object
	for _, o := range objs {
		if isFlotilla(o) {
			flotilla = append(flotilla, o)
		} else {
			kube = append(kube, o)
		}
	}
	f := &Fakes{t: t, Clock: clocktesting.NewFakeClock(now), Recorder: record.NewFakeRecorder(1000)}
	f.Kube = kubefake.NewClientset(kube...)
	f.Client = flotillafake.NewSimpleClientset(flotilla...) //nolint:staticcheck // NewClientset lacks the CRD schemas for its field manager
	f.KubeInformers = informers.NewSharedInformerFactory(f.Kube, 0)
	f.Informers = flotillainformers.NewSharedInformerFactory(f.Client, 0)
	return f
}

func isFlotilla(o runtime.Object) bool {
	gvks, _, err := flotillascheme.Scheme.ObjectKinds(o)
	return err == nil && len(gvks) > 0
}

// Deps are the reconciler's Deps over the fakes, with the default queue options on the fake clock.
func (f *Fakes) Deps() wiring.Deps {
	return wiring.Deps{Kube: f.Kube, Client: f.Client, KubeInformers: f.KubeInformers, Informers: f.Informers,
		Clock: f.Clock, Recorder: f.Recorder, QueueOptions: controller.DefaultQueueOptions(),
		QueueConfig: controller.QueueConfig{Clock: f.Clock}}
}

// Cache puts each of objs in the cache of the factories' informer of its kind, as the informer would after a
// change. The informer must have been requested already (by the reconciler's New), so that it is the reconciler's.
func (f *Fakes) Cache(objs ...runtime.Object) {
	f.t.Helper()
	for _, o := range objs {
		require.NoError(f.t, f.Informer(o).GetIndexer().Update(o), "cache %T", o)
	}
}

// Uncache removes each of objs from its informer's cache.
func (f *Fakes) Uncache(objs ...runtime.Object) {
	f.t.Helper()
	for _, o := range objs {
		require.NoError(f.t, f.Informer(o).GetIndexer().Delete(o), "uncache %T", o)
	}
}

// Informer is the factories' informer of o's kind.
func (f *Fakes) Informer(o runtime.Object) cache.SharedIndexInformer {
	f.t.Helper()
	var (
		inf interface {
			Informer() cache.SharedIndexInformer
		}
		err error
	)
	if isFlotilla(o) {
		inf, err = f.Informers.ForResource(resourceOf(f.t, flotillascheme.Scheme, o))
	} else {
		inf, err = f.KubeInformers.ForResource(resourceOf(f.t, kubescheme.Scheme, o))
	}
	require.NoError(f.t, err, "informer of %T", o)
	return inf.Informer()
}

// resourceOf is the resource of o's kind in scheme.
func resourceOf(t testing.TB, scheme *runtime.Scheme, o runtime.Object) schema.GroupVersionResource {
	t.Helper()
	gvks, _, err := scheme.ObjectKinds(o)
	require.NoError(t, err, "kind of %T", o)
	gvr, _ := meta.UnsafeGuessKindToResource(gvks[0])
	return gvr
}

// Clear forgets the actions both clientsets recorded so far.
func (f *Fakes) Clear() {
	f.Kube.ClearActions()
	f.Client.ClearActions()
}

// BumpResourceVersions makes both clientsets move an object's resourceVersion on every update, as the API server
// does: the fake tracker stores the resourceVersion it is sent, so without this a reconciler's own write would look
// like the stale copy in its cache, and expectations on its writes' resourceVersions would never hold a sync back.
// The n-th update stores resourceVersion 1000+n (above any a fixture sets by hand). Patches keep theirs: the tracker
// applies them itself. Call it once, before the writes it is to bump.
func (f *Fakes) BumpResourceVersions() {
	var rv atomic.Int64
	rv.Store(1000)
	bump := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if u, ok := a.(k8stesting.UpdateAction); ok {
			if m, err := meta.Accessor(u.GetObject()); err == nil {
				m.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
			}
		}
		return false, nil, nil // the tracker stores the object as bumped
	}
	f.Kube.PrependReactor("update", "*", bump)
	f.Client.PrependReactor("update", "*", bump)
}

// Events are the events Recorder recorded since the last call, oldest first, as "type reason message".
func (f *Fakes) Events() []string {
	var out []string
	for {
		select {
		case e := <-f.Recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// Writes are the writes both clientsets recorded since the last Clear (Kube's first), each as
// "verb resource[/subresource] name"; reads (get, list, watch) are left out.
func (f *Fakes) Writes() []string {
	var out []string
	for _, a := range f.Actions() {
		out = append(out, Describe(a))
	}
	return out
}

// Actions are the write actions both clientsets recorded since the last Clear (Kube's first).
func (f *Fakes) Actions() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range append(f.Kube.Actions(), f.Client.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a)
	}
	return out
}

// Describe is a as Writes lists it: "verb resource[/subresource] name".
func Describe(a k8stesting.Action) string {
	r := a.GetResource().Resource
	if a.GetSubresource() != "" {
		r += "/" + a.GetSubresource()
	}
	var name string
	switch a := a.(type) {
	case k8stesting.CreateAction:
		if m, ok := a.GetObject().(metav1.Object); ok {
			name = m.GetName()
		}
	case k8stesting.UpdateAction:
		if m, ok := a.GetObject().(metav1.Object); ok {
			name = m.GetName()
		}
	case interface{ GetName() string }:
		name = a.GetName()
	}
	return fmt.Sprintf("%s %s %s", a.GetVerb(), r, name)
}

// OnlyUpdate is the object of the one update of resource (of its subresource sub; "" for the object itself) both
// clientsets recorded since the last Clear; it fails the test unless there is exactly one.
func OnlyUpdate[T runtime.Object](f *Fakes, resource, sub string) T {
	f.t.Helper()
	var got []T
	for _, a := range f.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetResource().Resource == resource && a.GetSubresource() == sub {
			obj, ok := u.GetObject().(T)
			require.True(f.t, ok, "update of %s carries a %T", resource, u.GetObject())
			got = append(got, obj)
		}
	}
	require.Len(f.t, got, 1, "updates of %s/%s", resource, sub)
	return got[0]
}
