package revision

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

var crResource = appsv1.SchemeGroupVersion.WithResource("controllerrevisions")

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
	name0 := "web-" + Hash([]byte(webPatch), ptr.To[int32](0)) // web-<hash with count 0>
	name1 := "web-" + Hash([]byte(webPatch), ptr.To[int32](1))
	name2 := "web-" + Hash([]byte(webPatch), ptr.To[int32](2))
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
			in := New(parent, cloneSetKind, map[string]string{"app": "web"}, []byte(webPatch), 5, &count)
			inCopy := in.DeepCopy()

			got, err := NewControl(client).Create(context.Background(), parent, in, &count)
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
			assert.Equal(t, ShortHash(tt.wantName), stored.Labels[HashLabel], "hash label follows the name")
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
	_, err := NewControl(client).Create(context.Background(), parent, New(parent, cloneSetKind, nil, []byte(webPatch), 1, nil), nil)
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
	_, err := NewControl(client).Create(context.Background(), parent, New(parent, cloneSetKind, nil, []byte(webPatch), 1, &count), &count)
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
	got, err := NewControl(client).Create(context.Background(), parent, New(parent, cloneSetKind, nil, []byte(webPatch), 1, &count), &count)
	require.NoError(t, err)
	assert.Equal(t, int32(0), count)
	assert.Equal(t, "web-"+Hash([]byte(webPatch), ptr.To[int32](0)), got.Name)
	assert.Equal(t, []string{"create", "get", "create"}, verbs(client))
}

func TestCreateOtherError(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(crResource.GroupResource(), "x", errors.New("no"))
	})
	parent := parentObj(nil)
	var count int32
	_, err := NewControl(client).Create(context.Background(), parent, New(parent, cloneSetKind, nil, []byte(webPatch), 1, &count), &count)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "the API error stays inspectable: %v", err)
	assert.Equal(t, int32(0), count)
}

func TestUpdateRevision(t *testing.T) {
	t.Run("bumps .revision without touching the input", func(t *testing.T) {
		old := existing("web-a", webPatch, "uid-web")
		client := fake.NewClientset(old.DeepCopy())
		got, err := NewControl(client).UpdateRevision(context.Background(), old, 9)
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
		got, err := NewControl(client).UpdateRevision(context.Background(), old, 1)
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
		got, err := NewControl(client).UpdateRevision(context.Background(), old, 9)
		require.NoError(t, err)
		assert.Equal(t, int64(9), got.Revision)
		assert.Equal(t, []string{"update", "get", "update"}, verbs(client))
	})

	t.Run("not found is an error", func(t *testing.T) {
		client := fake.NewClientset()
		_, err := NewControl(client).UpdateRevision(context.Background(), existing("web-a", webPatch, "uid-web"), 9)
		require.Error(t, err)
		assert.True(t, apierrors.IsNotFound(err))
	})
}

func TestDelete(t *testing.T) {
	t.Run("deletes with a UID precondition", func(t *testing.T) {
		r := existing("web-a", webPatch, "uid-web")
		client := fake.NewClientset(r.DeepCopy())
		require.NoError(t, NewControl(client).Delete(context.Background(), r))
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
		assert.NoError(t, NewControl(client).Delete(context.Background(), existing("web-a", webPatch, "uid-web")))
	})

	t.Run("other errors surface", func(t *testing.T) {
		client := fake.NewClientset()
		client.PrependReactor("delete", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(crResource.GroupResource(), "web-a", errors.New("uid mismatch"))
		})
		err := NewControl(client).Delete(context.Background(), existing("web-a", webPatch, "uid-web"))
		require.Error(t, err)
		assert.True(t, apierrors.IsConflict(err))
	})
}
