package revisionclient

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/revision"
)

var crResource = appsv1.SchemeGroupVersion.WithResource("controllerrevisions")

var cloneSetKind = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}

// webPatch is revision.TemplatePatch of a one-container template (as kit/revision's tests write it out).
const webPatch = `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx:1.25","name":"nginx","resources":{}}]}}}}`

func parentObj(annotations map[string]string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: types.UID("uid-web"), Annotations: annotations}
}

// existing returns a stored revision named name holding data, controlled by
// the owner with UID owner ("" = orphan).
func existing(name, data string, owner types.UID) *appsv1.ControllerRevision {
	r := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "42"},
		Data:       runtime.RawExtension{Raw: []byte(data)},
		Revision:   1,
	}
	if owner != "" {
		r.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: owner, Controller: ptr.To(true),
		}}
	}
	return r
}

func verbs(c *fake.Clientset) []string {
	out := []string{}
	for _, a := range c.Actions() {
		out = append(out, a.GetVerb())
	}
	return out
}

func TestCreate(t *testing.T) {
	name0 := "web-" + revision.Hash([]byte(webPatch), ptr.To[int32](0)) // web-<hash with count 0>
	name1 := "web-" + revision.Hash([]byte(webPatch), ptr.To[int32](1))
	name2 := "web-" + revision.Hash([]byte(webPatch), ptr.To[int32](2))
	require.NotEqual(t, name0, name1)

	tests := []struct {
		name       string
		objects    []runtime.Object
		startCount int32
		wantName   string
		wantCount  int32
		wantUID    types.UID // set when an existing object must come back
		wantVerbs  []string
	}{
		{
			name:      "free name",
			wantName:  name0,
			wantCount: 0,
			wantVerbs: []string{"create"},
		},
		{
			name:      "same name, different data: collision count bumps, new name",
			objects:   []runtime.Object{existing(name0, `{"other":true}`, "uid-web")},
			wantName:  name1,
			wantCount: 1,
			wantVerbs: []string{"create", "get", "create"},
		},
		{
			name: "two collisions in a row",
			objects: []runtime.Object{
				existing(name0, `{"other":true}`, "uid-web"),
				existing(name1, `{"other":2}`, "uid-other"),
			},
			wantName:  name2,
			wantCount: 2,
			wantVerbs: []string{"create", "get", "create", "get", "create"},
		},
		{
			name:      "same name, equal data, controlled by parent: returned as-is, no bump",
			objects:   []runtime.Object{existing(name0, webPatch, "uid-web")},
			wantName:  name0,
			wantCount: 0,
			wantUID:   types.UID("uid-" + name0),
			wantVerbs: []string{"create", "get"},
		},
		{
			name:      "same name, equal data, controlled by another workload: collision",
			objects:   []runtime.Object{existing(name0, webPatch, "uid-old-web")},
			wantName:  name1,
			wantCount: 1,
			wantVerbs: []string{"create", "get", "create"},
		},
		{
			name:      "same name, equal data, orphan: collision (no adoption)",
			objects:   []runtime.Object{existing(name0, webPatch, "")},
			wantName:  name1,
			wantCount: 1,
			wantVerbs: []string{"create", "get", "create"},
		},
		{
			name:       "starts from the persisted collision count",
			objects:    []runtime.Object{existing(name0, `{"other":true}`, "uid-web")},
			startCount: 1,
			wantName:   name1,
			wantCount:  1,
			wantVerbs:  []string{"create"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.objects...)
			parent := parentObj(map[string]string{"team": "a"})
			count := tt.startCount
			in := revision.New(parent, cloneSetKind, map[string]string{"app": "web"}, []byte(webPatch), 5, &count)
			inCopy := in.DeepCopy()

			got, err := New(client).Create(context.Background(), parent, in, &count)
			require.NoError(t, err)
			assert.Equal(t, tt.wantName, got.Name)
			assert.Equal(t, tt.wantCount, count)
			assert.Equal(t, tt.wantVerbs, verbs(client))
			assert.Equal(t, inCopy, in, "Create must not modify its input")
			if tt.wantUID != "" {
				assert.Equal(t, tt.wantUID, got.UID)
				assert.Equal(t, int64(1), got.Revision, "the stored object is returned, not ours")
				return
			}
			stored, err := client.AppsV1().ControllerRevisions("ns").Get(context.Background(), tt.wantName, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, revision.ShortHash(tt.wantName), stored.Labels[revision.HashLabel], "hash label follows the name")
			assert.Equal(t, "web", stored.Labels["app"])
			assert.Equal(t, webPatch, string(stored.Data.Raw))
			assert.Equal(t, int64(5), stored.Revision)
			assert.True(t, metav1.IsControlledBy(stored, parent))
		})
	}
}

func TestCreateNilCollisionCount(t *testing.T) {
	client := fake.NewClientset()
	parent := parentObj(nil)
	_, err := New(client).Create(context.Background(), parent, revision.New(parent, cloneSetKind, nil, []byte(webPatch), 1, nil), nil)
	assert.Error(t, err)
	assert.Empty(t, client.Actions())
}

func TestCreateBounded(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "controllerrevisions", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.CreateAction).GetObject().(*appsv1.ControllerRevision).Name
		return true, nil, apierrors.NewAlreadyExists(crResource.GroupResource(), name)
	})
	client.PrependReactor("get", "controllerrevisions", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, existing(a.(k8stesting.GetAction).GetName(), `{"never":"equal"}`, "uid-web"), nil
	})
	parent := parentObj(nil)
	var count int32
	_, err := New(client).Create(context.Background(), parent, revision.New(parent, cloneSetKind, nil, []byte(webPatch), 1, &count), &count)
	require.Error(t, err)
	assert.Equal(t, int32(maxCreateAttempts), count, "every collision is counted so the caller can persist it")
	assert.Len(t, client.Actions(), 2*maxCreateAttempts)
}

func TestCreateRetriesWhenCollidingObjectVanished(t *testing.T) {
	client := fake.NewClientset()
	creates := 0
	client.PrependReactor("create", "controllerrevisions", func(a k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		if creates == 1 {
			name := a.(k8stesting.CreateAction).GetObject().(*appsv1.ControllerRevision).Name
			return true, nil, apierrors.NewAlreadyExists(crResource.GroupResource(), name)
		}
		return false, nil, nil
	})
	parent := parentObj(nil)
	var count int32
	got, err := New(client).Create(context.Background(), parent, revision.New(parent, cloneSetKind, nil, []byte(webPatch), 1, &count), &count)
	require.NoError(t, err)
	assert.Equal(t, int32(0), count)
	assert.Equal(t, "web-"+revision.Hash([]byte(webPatch), ptr.To[int32](0)), got.Name)
	assert.Equal(t, []string{"create", "get", "create"}, verbs(client))
}

func TestCreateOtherError(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(crResource.GroupResource(), "x", errors.New("no"))
	})
	parent := parentObj(nil)
	var count int32
	_, err := New(client).Create(context.Background(), parent, revision.New(parent, cloneSetKind, nil, []byte(webPatch), 1, &count), &count)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "the API error stays inspectable: %v", err)
	assert.Equal(t, int32(0), count)
}

func TestUpdateRevision(t *testing.T) {
	t.Run("bumps .revision without touching the input", func(t *testing.T) {
		old := existing("web-a", webPatch, "uid-web")
		client := fake.NewClientset(old.DeepCopy())
		got, err := New(client).UpdateRevision(context.Background(), old, 9)
		require.NoError(t, err)
		assert.Equal(t, int64(9), got.Revision)
		assert.Equal(t, int64(1), old.Revision, "input (a cache object) must not change")
		stored, err := client.AppsV1().ControllerRevisions("ns").Get(context.Background(), "web-a", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int64(9), stored.Revision)
		assert.Equal(t, webPatch, string(stored.Data.Raw))
	})

	t.Run("already at the number: no write", func(t *testing.T) {
		old := existing("web-a", webPatch, "uid-web")
		client := fake.NewClientset(old.DeepCopy())
		got, err := New(client).UpdateRevision(context.Background(), old, 1)
		require.NoError(t, err)
		assert.Equal(t, int64(1), got.Revision)
		assert.Empty(t, client.Actions())
	})

	t.Run("conflict: re-reads and retries", func(t *testing.T) {
		old := existing("web-a", webPatch, "uid-web")
		client := fake.NewClientset(old.DeepCopy())
		updates := 0
		client.PrependReactor("update", "controllerrevisions", func(a k8stesting.Action) (bool, runtime.Object, error) {
			updates++
			if updates == 1 {
				return true, nil, apierrors.NewConflict(crResource.GroupResource(), "web-a", errors.New("stale"))
			}
			return false, nil, nil
		})
		got, err := New(client).UpdateRevision(context.Background(), old, 9)
		require.NoError(t, err)
		assert.Equal(t, int64(9), got.Revision)
		assert.Equal(t, []string{"update", "get", "update"}, verbs(client))
	})

	t.Run("not found is an error", func(t *testing.T) {
		client := fake.NewClientset()
		_, err := New(client).UpdateRevision(context.Background(), existing("web-a", webPatch, "uid-web"), 9)
		require.Error(t, err)
		assert.True(t, apierrors.IsNotFound(err))
	})
}

func TestDelete(t *testing.T) {
	t.Run("deletes with a UID precondition", func(t *testing.T) {
		r := existing("web-a", webPatch, "uid-web")
		client := fake.NewClientset(r.DeepCopy())
		require.NoError(t, New(client).Delete(context.Background(), r))
		_, err := client.AppsV1().ControllerRevisions("ns").Get(context.Background(), "web-a", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err))
		var del k8stesting.DeleteActionImpl
		for _, a := range client.Actions() {
			if d, ok := a.(k8stesting.DeleteActionImpl); ok {
				del = d
			}
		}
		require.NotNil(t, del.DeleteOptions.Preconditions)
		assert.Equal(t, types.UID("uid-web-a"), *del.DeleteOptions.Preconditions.UID)
	})

	t.Run("already gone is fine", func(t *testing.T) {
		client := fake.NewClientset()
		assert.NoError(t, New(client).Delete(context.Background(), existing("web-a", webPatch, "uid-web")))
	})

	t.Run("other errors surface", func(t *testing.T) {
		client := fake.NewClientset()
		client.PrependReactor("delete", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(crResource.GroupResource(), "web-a", errors.New("uid mismatch"))
		})
		err := New(client).Delete(context.Background(), existing("web-a", webPatch, "uid-web"))
		require.Error(t, err)
		assert.True(t, apierrors.IsConflict(err))
	})
}

// TestResolveThroughClient: kit/revision's Resolve over this Control makes
// the requests its tests (over a recording Control) expect: a re-numbered
// rollback is one update, a new template one create of the named revision.
func TestResolveThroughClient(t *testing.T) {
	parent := &metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "owner"}
	stored := func(name, data string, rev int64) *appsv1.ControllerRevision {
		r := existing(name, data, "owner")
		r.Revision = rev
		return r
	}
	v1, v2 := `{"v":1}`, `{"v":2}`
	for _, tc := range []struct {
		name       string
		revisions  []*appsv1.ControllerRevision
		data       string
		wantNumber int64
		wantVerbs  []string
	}{
		{"rollback re-numbers the equal older revision", []*appsv1.ControllerRevision{stored("web-a", v1, 1), stored("web-b", v2, 2)}, v1, 3, []string{"update"}},
		{"a new template creates a revision", []*appsv1.ControllerRevision{stored("web-a", v1, 1)}, v2, 2, []string{"create"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{}
			for _, r := range tc.revisions {
				objs = append(objs, r.DeepCopy())
			}
			client := fake.NewClientset(objs...)
			var collisions int32
			want := revision.New(parent, cloneSetKind, nil, []byte(tc.data), revision.NextRevisionNumber(tc.revisions), &collisions)
			res, err := revision.Resolve(context.Background(), New(client), parent, want, tc.revisions, &collisions)
			require.NoError(t, err)
			assert.True(t, res.Written)
			assert.Equal(t, tc.wantVerbs, verbs(client))
			got, err := client.AppsV1().ControllerRevisions("ns").Get(context.Background(), res.Update.Name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.wantNumber, got.Revision, "stored")
			assert.Equal(t, tc.data, string(got.Data.Raw))
		})
	}
}
