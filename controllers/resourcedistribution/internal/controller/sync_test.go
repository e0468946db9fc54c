package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// Fixture-and-actions tests of sync: the informers' indexers are seeded by hand (never started), sync runs
// against fake clientsets, and the tests assert on the writes the clientsets recorded.

var rdNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type rdFixture struct {
	*wiringtest.Fakes
	t *testing.T
	c *Controller
}

// newRDFixture builds the controller through New over fake clientsets holding rd, the namespaces and the
// copies, and puts the same objects in its caches.
func newRDFixture(t *testing.T, rd *appsv1alpha1.ResourceDistribution, nss []*corev1.Namespace, copies ...*corev1.Secret) *rdFixture {
	t.Helper()
	objs := []runtime.Object{rd}
	for _, ns := range nss {
		objs = append(objs, ns)
	}
	for _, s := range copies {
		objs = append(objs, s)
	}
	f := &rdFixture{Fakes: wiringtest.New(t, rdNow, objs...), t: t}
	c, err := New(f.Deps())
	require.NoError(t, err)
	t.Cleanup(c.Queue.ShutDown)
	f.c = c
	f.Cache(objs...) // the Secrets go to the reconciler's informer of copies
	return f
}

// sync runs one sync of the distribution named "rd" against cleared action logs.
func (f *rdFixture) sync() error {
	f.t.Helper()
	f.Clear()
	return f.c.sync(context.Background(), types.NamespacedName{Name: "rd"})
}

// refreshCaches does what the informers would after sync's writes: the cache shows the distribution and the
// copies as the API server now holds them.
func (f *rdFixture) refreshCaches() {
	f.t.Helper()
	rd, err := f.Client.AppsV1alpha1().ResourceDistributions().Get(context.Background(), "rd", metav1.GetOptions{})
	require.NoError(f.t, err)
	f.Cache(rd)
	list, err := f.Kube.CoreV1().Secrets(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	require.NoError(f.t, err)
	for i := range list.Items {
		if s := &list.Items[i]; s.Labels[CopyLabel] == "true" {
			f.Cache(s)
		}
	}
}

// writes are wiringtest's Writes with the namespace of a namespaced object before its name:
// "verb resource[/subresource] [namespace/]name".
func (f *rdFixture) writes() []string {
	var out []string
	for _, a := range f.Actions() {
		d := wiringtest.Describe(a)
		if ns := a.GetNamespace(); ns != "" {
			i := strings.LastIndex(d, " ") + 1 // names hold no spaces
			d = d[:i] + ns + "/" + d[i:]
		}
		out = append(out, d)
	}
	return out
}

// written returns the Secret the create or update of namespace ns/creds carried.
func (f *rdFixture) written(verb, ns string) *corev1.Secret {
	f.t.Helper()
	for _, a := range f.Kube.Actions() {
		if a.Matches(verb, "secrets") && a.GetNamespace() == ns {
			// An update action is a CreateAction too: the same methods.
			obj := a.(clienttesting.CreateAction).GetObject()
			s, ok := obj.(*corev1.Secret)
			require.True(f.t, ok, "%s of %T", verb, obj)
			return s
		}
	}
	require.Failf(f.t, "no write", "no %s of a secret in %s", verb, ns)
	return nil
}

// status is the status of the one status update sync sent.
func (f *rdFixture) status() appsv1alpha1.ResourceDistributionStatus {
	return wiringtest.OnlyUpdate[*appsv1alpha1.ResourceDistribution](f.Fakes, "resourcedistributions", "status").Status
}

// condition returns st's condition of type ct.
func condition(t *testing.T, st appsv1alpha1.ResourceDistributionStatus, ct appsv1alpha1.ResourceDistributionConditionType) appsv1alpha1.ResourceDistributionCondition {
	t.Helper()
	for _, c := range st.Conditions {
		if c.Type == ct {
			return c
		}
	}
	require.Failf(t, "no condition", "%s", ct)
	return appsv1alpha1.ResourceDistributionCondition{}
}

// hashOf is the hash annotation a copy of rd's source carries: the SHA-256 of spec.resource as stored.
func hashOf(rd *appsv1alpha1.ResourceDistribution) string {
	sum := sha256.Sum256(rd.Spec.Resource.Raw)
	return hex.EncodeToString(sum[:])
}

// copyOf is, written out by hand, the up-to-date copy of secretSource's Secret (data pw) in ns, as it would be
// stored: stringData folded into data, type Opaque.
func copyOf(rd *appsv1alpha1.ResourceDistribution, ns, pw string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns, UID: types.UID("uid-copy-" + ns), ResourceVersion: "5",
			Labels: map[string]string{"app": "x", CopyLabel: "true"},
			Annotations: map[string]string{"note": "n", appsv1alpha1.ResourceDistributionHashAnnotation: hashOf(rd),
				appsv1alpha1.ResourceDistributionSourceAnnotation: "rd"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ResourceDistribution",
				Name: "rd", UID: "rd-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"user": []byte("admin"), "pw": []byte(pw)},
	}
}

// sourceWithPassword is secretSource with data pw set to pw.
func sourceWithPassword(pw string) map[string]any {
	s := secretSource()
	s["data"] = map[string]any{"pw": []byte(pw)} // json encodes []byte as base64, as data is
	return s
}

// included is the distribution of resource to the named namespaces.
func included(t *testing.T, resource any, names ...string) *appsv1alpha1.ResourceDistribution {
	t.Helper()
	rd := rdWith(t, resource)
	rd.ResourceVersion = "1"
	rd.Spec.Targets.IncludedNamespaces.List = nsList(names...)
	return rd
}

// Copies go to the selected namespaces only (label selector and includedNamespaces, minus excludedNamespaces),
// carrying the source's content and metadata, the hash and source annotations and the distribution as
// controller; the status counts them. Once the caches show those writes, a second sync (a minute later)
// writes nothing: neither an up-to-date copy nor an unchanged status (whose transition times stay).
func TestSyncCreatesCopiesInSelectedNamespacesOnly(t *testing.T) {
	rd := included(t, secretSource(), "extra")
	rd.Spec.Targets.NamespaceLabelSelector = metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	rd.Spec.Targets.ExcludedNamespaces.List = nsList("prod-skip")
	prod := map[string]string{"env": "prod"}
	f := newRDFixture(t, rd, []*corev1.Namespace{
		namespace("prod-a", prod), namespace("prod-b", prod), namespace("prod-skip", prod),
		namespace("dev", map[string]string{"env": "dev"}), namespace("extra", nil),
	})

	require.NoError(t, f.sync())
	assert.ElementsMatch(t, []string{
		"create secrets prod-a/creds", "create secrets prod-b/creds", "create secrets extra/creds",
		"update resourcedistributions/status rd",
	}, f.writes())
	for _, ns := range []string{"prod-a", "prod-b", "extra"} {
		want := copyOf(rd, ns, "secret")
		got := f.written("create", ns)
		assert.Equal(t, want.Data, got.Data, ns)
		assert.Equal(t, want.Type, got.Type, ns)
		assert.Equal(t, want.Labels, got.Labels, ns)
		assert.Equal(t, want.Annotations, got.Annotations, ns)
		assert.Equal(t, want.OwnerReferences, got.OwnerReferences, ns)
	}
	st := f.status()
	assert.Equal(t, int32(3), st.Desired)
	assert.Equal(t, int32(3), st.Succeeded)
	assert.Equal(t, int32(0), st.Failed)
	assert.Equal(t, int64(3), st.ObservedGeneration)
	require.Len(t, st.Conditions, 6)
	for _, c := range st.Conditions {
		assert.Equal(t, appsv1alpha1.ResourceDistributionConditionFalse, c.Status, c.Type)
		assert.Equal(t, rdNow, c.LastTransitionTime.Time, c.Type)
	}

	f.refreshCaches()
	f.Clock.Step(time.Minute)
	require.NoError(t, f.sync())
	assert.Empty(t, f.writes(), "everything is up to date")
}

// A changed source updates the copies that differ, keeping what other tools added (an extra label) and the
// resourceVersion read (a concurrent change fails the update); a copy already matching the new source is not
// written.
func TestSyncUpdatesCopiesOfAChangedSource(t *testing.T) {
	rd := included(t, sourceWithPassword("new"), "stale", "current")
	stale := copyOf(rd, "stale", "old")
	stale.Annotations[appsv1alpha1.ResourceDistributionHashAnnotation] = "previous-hash"
	stale.Labels["added-by"] = "other-tool"
	current := copyOf(rd, "current", "new")
	f := newRDFixture(t, rd, []*corev1.Namespace{namespace("stale", nil), namespace("current", nil)}, stale, current)

	require.NoError(t, f.sync())
	assert.ElementsMatch(t, []string{"update secrets stale/creds", "update resourcedistributions/status rd"}, f.writes())
	got := f.written("update", "stale")
	assert.Equal(t, map[string][]byte{"user": []byte("admin"), "pw": []byte("new")}, got.Data, "the source's data replaces the copy's")
	assert.Equal(t, hashOf(rd), got.Annotations[appsv1alpha1.ResourceDistributionHashAnnotation])
	assert.Equal(t, "other-tool", got.Labels["added-by"], "labels the source does not set are kept")
	assert.Equal(t, "5", got.ResourceVersion, "the update carries the version it was computed from")
	st := f.status()
	assert.Equal(t, int32(2), st.Desired)
	assert.Equal(t, int32(2), st.Succeeded)
}

// A copy in a namespace no longer targeted is deleted, with a UID precondition; one in a namespace being
// deleted goes with its namespace, and a copy of another distribution is not this one's to touch.
func TestSyncDeletesCopiesNoLongerTargeted(t *testing.T) {
	rd := included(t, secretSource(), "kept")
	dyingNS := namespace("dying", nil)
	dyingNS.DeletionTimestamp = &metav1.Time{Time: rdNow}
	dyingNS.Finalizers = []string{"kubernetes"}
	others := copyOf(rd, "foreign-rd", "secret")
	others.OwnerReferences[0].Name, others.OwnerReferences[0].UID = "other", "other-uid"
	f := newRDFixture(t, rd,
		[]*corev1.Namespace{namespace("kept", nil), namespace("dropped", nil), dyingNS, namespace("foreign-rd", nil)},
		copyOf(rd, "kept", "secret"), copyOf(rd, "dropped", "secret"), copyOf(rd, "dying", "secret"), others)

	require.NoError(t, f.sync())
	assert.ElementsMatch(t, []string{"delete secrets dropped/creds", "update resourcedistributions/status rd"}, f.writes())
	for _, a := range f.Kube.Actions() {
		if a.Matches("delete", "secrets") {
			opts := a.(clienttesting.DeleteAction).GetDeleteOptions()
			require.NotNil(t, opts.Preconditions)
			assert.Equal(t, types.UID("uid-copy-dropped"), *opts.Preconditions.UID)
		}
	}
	_, err := f.Kube.CoreV1().Secrets("foreign-rd").Get(context.Background(), "creds", metav1.GetOptions{})
	assert.NoError(t, err, "another distribution's copy stays")
	st := f.status()
	assert.Equal(t, int32(1), st.Desired, "a namespace no longer targeted is not counted")
	assert.Equal(t, int32(1), st.Succeeded)
}

// A target namespace holding an object of the name this distribution does not control, and an included
// namespace that does not exist, are reported in the status (ConflictOccurred, NamespaceNotExists), not
// retried as errors, and the other object is left alone. The status is written only when it changes: a later
// sync with the same outcome writes none, the conditions keeping their transition times.
func TestSyncConflictAndMissingNamespace(t *testing.T) {
	rd := included(t, secretSource(), "free", "taken", "missing")
	f := newRDFixture(t, rd, []*corev1.Namespace{namespace("free", nil), namespace("taken", nil)})
	// Unlabelled, so the controller's cache never holds it.
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "taken", UID: "theirs"},
		Data: map[string][]byte{"mine": []byte("hands off")}}
	require.NoError(t, f.Kube.Tracker().Add(theirs))

	require.NoError(t, f.sync(), "conflicts and missing namespaces wait for an event, not a retry")
	assert.ElementsMatch(t, []string{
		"create secrets free/creds", "create secrets taken/creds", "update resourcedistributions/status rd",
	}, f.writes(), "the create in taken finds their object and writes nothing else")
	live, err := f.Kube.CoreV1().Secrets("taken").Get(context.Background(), "creds", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, theirs.Data, live.Data)
	assert.Empty(t, live.OwnerReferences)
	st := f.status()
	assert.Equal(t, int32(3), st.Desired)
	assert.Equal(t, int32(1), st.Succeeded)
	assert.Equal(t, int32(2), st.Failed)
	conflict := condition(t, st, appsv1alpha1.ResourceDistributionConflictOccurred)
	assert.Equal(t, appsv1alpha1.ResourceDistributionConditionTrue, conflict.Status)
	assert.Equal(t, []string{"taken"}, conflict.FailedNamespaces)
	assert.Equal(t, reasonConflict, conflict.Reason)
	notExist := condition(t, st, appsv1alpha1.ResourceDistributionNamespaceNotExists)
	assert.Equal(t, appsv1alpha1.ResourceDistributionConditionTrue, notExist.Status)
	assert.Equal(t, []string{"missing"}, notExist.FailedNamespaces)

	f.refreshCaches()
	f.Clock.Step(time.Minute)
	require.NoError(t, f.sync())
	// Their object lacks CopyLabel, so only a create tells it is there: the one write each sync tries.
	assert.Equal(t, []string{"create secrets taken/creds"}, f.writes(), "same outcome: no status write")
}
