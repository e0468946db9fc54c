package revision

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

var cloneSetKind = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}

func parentObj(annotations map[string]string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: types.UID("uid-web"), Annotations: annotations}
}

func TestNew(t *testing.T) {
	data := []byte(webPatch)
	tests := []struct {
		name            string
		annotations     map[string]string
		labels          map[string]string
		count           *int32
		wantName        string
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{
		{
			name:            "labels from template, annotations from parent",
			annotations:     map[string]string{"kubernetes.io/change-cause": "set image", "team": "a"},
			labels:          map[string]string{"app": "web", "tier": "fe"},
			wantName:        "web-59fcdf9bbc",
			wantLabels:      map[string]string{"app": "web", "tier": "fe", HashLabel: "59fcdf9bbc"},
			wantAnnotations: map[string]string{"kubernetes.io/change-cause": "set image", "team": "a"},
		},
		{
			name:       "no labels, no annotations",
			wantName:   "web-59fcdf9bbc",
			wantLabels: map[string]string{HashLabel: "59fcdf9bbc"},
		},
		{
			name:       "collision count changes name and hash label",
			labels:     map[string]string{"app": "web"},
			count:      ptr.To[int32](3),
			wantName:   "web-7cd7c66f7d",
			wantLabels: map[string]string{"app": "web", HashLabel: "7cd7c66f7d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := parentObj(tt.annotations)
			rev := New(parent, cloneSetKind, tt.labels, data, 7, tt.count)
			assert.Equal(t, tt.wantName, rev.Name)
			assert.Equal(t, "ns", rev.Namespace)
			assert.Equal(t, tt.wantLabels, rev.Labels)
			assert.Equal(t, tt.wantAnnotations, rev.Annotations)
			assert.Equal(t, int64(7), rev.Revision)
			assert.Equal(t, webPatch, string(rev.Data.Raw))
			assert.Nil(t, rev.Data.Object)
			assert.Equal(t, []metav1.OwnerReference{{
				APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-web",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}}, rev.OwnerReferences)
			assert.True(t, metav1.IsControlledBy(rev, parent))
		})
	}
}

func TestNewCopiesInputs(t *testing.T) {
	labels := map[string]string{"app": "web"}
	parent := parentObj(map[string]string{"a": "1"})
	data := []byte(webPatch)
	rev := New(parent, cloneSetKind, labels, data, 1, nil)

	labels["app"] = "changed"
	parent.Annotations["a"] = "changed"
	data[0] = 'X'
	assert.Equal(t, "web", rev.Labels["app"])
	assert.Equal(t, "1", rev.Annotations["a"])
	assert.Equal(t, webPatch, string(rev.Data.Raw))
	_, ok := labels[HashLabel]
	assert.False(t, ok, "template labels must not gain the hash label")
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func rev(name string, revision int64, data string, age time.Duration) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0.Add(-age))},
		Data:       runtime.RawExtension{Raw: []byte(data)},
		Revision:   revision,
	}
}

func names(revs []*appsv1.ControllerRevision) []string {
	out := []string{}
	for _, r := range revs {
		out = append(out, r.Name)
	}
	return out
}

func TestFindEqual(t *testing.T) {
	revs := []*appsv1.ControllerRevision{
		rev("web-a", 1, `{"a":1}`, 0),
		rev("web-b", 2, `{"b":1}`, 0),
		rev("web-a2", 3, `{"a":1}`, 0),
		rev("web-obj", 4, ``, 0),
	}
	tests := []struct {
		data string
		want []string
	}{
		{`{"a":1}`, []string{"web-a", "web-a2"}},
		{`{"b":1}`, []string{"web-b"}},
		{`{"b": 1}`, []string{}}, // bytes, not JSON semantics
		{`{"c":1}`, []string{}},
		{``, []string{"web-obj"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, names(FindEqual(revs, []byte(tt.data))), "data %q", tt.data)
	}
	assert.Empty(t, FindEqual(nil, []byte(`{}`)))
}

func TestNextRevisionNumber(t *testing.T) {
	assert.Equal(t, int64(1), NextRevisionNumber(nil))
	assert.Equal(t, int64(2), NextRevisionNumber([]*appsv1.ControllerRevision{rev("a", 1, "", 0)}))
	assert.Equal(t, int64(10), NextRevisionNumber([]*appsv1.ControllerRevision{
		rev("a", 3, "", 0), rev("b", 9, "", 0), rev("c", 4, "", 0),
	}), "unsorted input")
}

func TestSort(t *testing.T) {
	revs := []*appsv1.ControllerRevision{
		rev("d", 3, "", 0),
		rev("c", 2, "", time.Minute),   // same .revision, newer than b
		rev("b", 2, "", 2*time.Minute), // same .revision, older
		rev("y", 1, "", 0),             // same .revision and time as x: by name
		rev("x", 1, "", 0),
		rev("a", 5, "", 10*time.Minute), // creation time does not beat .revision
	}
	objs := make([]appsv1.ControllerRevision, len(revs))
	for i := range revs {
		objs[i] = *revs[i].DeepCopy()
	}
	Sort(revs)
	assert.Equal(t, []string{"x", "y", "b", "c", "d", "a"}, names(revs))
	for i := range objs {
		found := false
		for _, r := range revs {
			if r.Name == objs[i].Name {
				assert.Equal(t, objs[i], *r)
				found = true
			}
		}
		assert.True(t, found)
	}
}

func TestTruncate(t *testing.T) {
	// r1…r6 oldest to newest; listed out of order to prove Truncate sorts.
	history := []*appsv1.ControllerRevision{
		rev("web-r4", 4, "", 0), rev("web-r1", 1, "", 0), rev("web-r6", 6, "", 0),
		rev("web-r2", 2, "", 0), rev("web-r5", 5, "", 0), rev("web-r3", 3, "", 0),
	}
	tests := []struct {
		name  string
		revs  []*appsv1.ControllerRevision
		live  sets.Set[string]
		limit int
		want  []string
	}{
		{
			name: "within limit", revs: history, limit: 10,
			live: sets.New("web-r6"), want: []string{},
		},
		{
			name: "exactly at limit", revs: history, limit: 5,
			live: sets.New("web-r6"), want: []string{},
		},
		{
			name: "oldest go first; current and update kept", revs: history, limit: 2,
			live: sets.New("web-r5", "web-r6"), want: []string{"web-r1", "web-r2"},
		},
		{
			name: "revisions referenced by pods are kept even if oldest", revs: history, limit: 1,
			live: sets.New("web-r6", "web-r1", "web-r3"), want: []string{"web-r2", "web-r4"},
		},
		{
			name: "limit 0 deletes every revision not live", revs: history, limit: 0,
			live: sets.New("web-r2", "web-r6"), want: []string{"web-r1", "web-r3", "web-r4", "web-r5"},
		},
		{
			name: "negative limit counts as 0", revs: history, limit: -3,
			live: sets.New("web-r6"), want: []string{"web-r1", "web-r2", "web-r3", "web-r4", "web-r5"},
		},
		{
			name: "short hash on pods keeps the revision", revs: history, limit: 0,
			live: sets.New("web-r6", "r2"), want: []string{"web-r1", "web-r3", "web-r4", "web-r5"},
		},
		{
			name: "rollback: re-used old revision now newest, current older", limit: 1,
			revs: []*appsv1.ControllerRevision{
				rev("web-a", 7, "", 3*time.Hour), rev("web-b", 2, "", 2*time.Hour),
				rev("web-c", 3, "", time.Hour), rev("web-d", 4, "", 0), rev("web-e", 5, "", 0),
			},
			live: sets.New("web-a", "web-e"), want: []string{"web-b", "web-c"},
		},
		{
			name: "ties in .revision by creation time then name", limit: 1,
			revs: []*appsv1.ControllerRevision{
				rev("web-z", 1, "", time.Hour), rev("web-y", 1, "", 2*time.Hour),
				rev("web-b", 1, "", 0), rev("web-a", 1, "", 0),
			},
			live: sets.New[string](), want: []string{"web-y", "web-z", "web-a"},
		},
		{
			name: "everything live", revs: history, limit: 0,
			live: sets.New("web-r1", "web-r2", "web-r3", "web-r4", "web-r5", "web-r6"), want: []string{},
		},
		{
			name: "nil live set", revs: history, limit: 4,
			live: nil, want: []string{"web-r1", "web-r2"},
		},
		{name: "no history", limit: 0, live: sets.New("x"), want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := names(tt.revs)
			got := Truncate(tt.revs, tt.live, tt.limit)
			assert.Equal(t, tt.want, names(got))
			assert.Equal(t, before, names(tt.revs), "input slice must keep its order")
		})
	}
}

func TestTruncateDoesNotTouchObjects(t *testing.T) {
	revs := []*appsv1.ControllerRevision{rev("web-b", 2, "x", 0), rev("web-a", 1, "y", 0)}
	want := []*appsv1.ControllerRevision{revs[0].DeepCopy(), revs[1].DeepCopy()}
	got := Truncate(revs, sets.New[string](), 0)
	require.Len(t, got, 2)
	assert.Equal(t, want, revs)
}
