package controller

import (
	"testing"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlan(t *testing.T) {
	rd := rdWith(t, secretSource())
	src, err := parseSource(rd)
	require.NoError(t, err)
	want := newDesiredMeta(rd, src)
	upToDate := func(ns string) *corev1.Secret { return newCopy(src, ns, want).(*corev1.Secret) }
	stale := upToDate("stale")
	stale.Data["pw"] = []byte("old")
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "foreign", Labels: map[string]string{CopyLabel: "true"}}}
	pendingCopy := upToDate("pending")
	pendingCopy.Data["pw"] = []byte("old")
	leftover := upToDate("left")
	leftInTerminating := upToDate("dying")
	now := metav1.Now()
	cache := map[string]metav1.Object{"ok": upToDate("ok"), "stale": stale, "foreign": foreign, "pending": pendingCopy,
		"left": leftover, "dying": leftInTerminating}
	nss := map[string]*corev1.Namespace{}
	for _, n := range []string{"ok", "stale", "foreign", "pending", "new", "left"} {
		nss[n] = namespace(n, nil)
	}
	nss["terminating"] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "terminating", DeletionTimestamp: &now}}
	nss["dying"] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dying", DeletionTimestamp: &now}}
	in := planInput{
		rdName: "rd", src: src, want: want, namespaces: nss,
		targets: []string{"foreign", "missing", "new", "ok", "pending", "stale", "terminating"},
		cached:  func(ns string) metav1.Object { return cache[ns] },
		owned:   []metav1.Object{cache["ok"], stale, pendingCopy, leftover, leftInTerminating},
		pending: func(o metav1.Object) bool { return o.GetNamespace() == "pending" },
	}
	got := map[string]op{}
	for _, a := range plan(in) {
		got[a.ns] = a.op
	}
	assert.Equal(t, map[string]op{
		"foreign": opConflict, "missing": opNotExist, "new": opCreate, "ok": opNone, "pending": opWait,
		"stale": opUpdate, "terminating": opNotExist, "left": opDelete,
	}, got)
}

func TestLimitWrites(t *testing.T) {
	actions := []action{{ns: "a", op: opCreate}, {ns: "b", op: opNone}, {ns: "c", op: opUpdate}, {ns: "d", op: opDelete}, {ns: "e", op: opConflict}}
	assert.True(t, limitWrites(actions, 2))
	ops := []op{}
	for _, a := range actions {
		ops = append(ops, a.op)
	}
	assert.Equal(t, []op{opCreate, opNone, opUpdate, opWait, opConflict}, ops)
	assert.False(t, limitWrites([]action{{op: opCreate}}, 2))
}

// Only API errors are returned for a retry: conflicts and missing namespaces wait for an event, deferred
// namespaces are requeued anyway.
func TestRetryErrors(t *testing.T) {
	cases := []struct {
		name     string
		outcomes []outcome
		want     string // "" no error
	}{
		{name: "all fine", outcomes: []outcome{{ns: "a", ok: true, target: true}, {ns: "b", ok: true}}},
		{name: "conflict, missing namespace and deferred", outcomes: []outcome{
			{ns: "a", failed: appsv1alpha1.ResourceDistributionConflictOccurred, reason: reasonConflict, target: true},
			{ns: "b", failed: appsv1alpha1.ResourceDistributionNamespaceNotExists, reason: reasonNotExist, target: true},
			{ns: "c", target: true}}},
		{name: "API errors", outcomes: []outcome{
			{ns: "a", failed: appsv1alpha1.ResourceDistributionCreateResourceFailed, reason: "boom", target: true},
			{ns: "b", ok: true, target: true},
			{ns: "c", failed: appsv1alpha1.ResourceDistributionDeleteResourceFailed, reason: "gone wrong"}},
			want: "CreateResourceFailed in namespace a: boom\nDeleteResourceFailed in namespace c: gone wrong"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := retryErrors(tc.outcomes)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
		})
	}
}
