package revision

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestResolve(t *testing.T) {
	parent := &metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "owner"}
	kind := appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	stored := func(name, data string, rev int64) *appsv1.ControllerRevision {
		r := existing(name, data, "owner")
		r.Revision = rev
		return r
	}
	v1, v2 := `{"v":1}`, `{"v":2}`
	for _, tc := range []struct {
		name        string
		revisions   []*appsv1.ControllerRevision
		data        string
		wantName    string
		wantNumber  int64
		wantWritten bool
		wantVerbs   []string
		wantCount   int
	}{
		{name: "the newest revision already holds the template: nothing written",
			revisions: []*appsv1.ControllerRevision{stored("web-a", v1, 1), stored("web-b", v2, 2)}, data: v2,
			wantName: "web-b", wantNumber: 2, wantVerbs: []string{}, wantCount: 2},
		{name: "rollback re-numbers the equal older revision",
			revisions: []*appsv1.ControllerRevision{stored("web-a", v1, 1), stored("web-b", v2, 2)}, data: v1,
			wantName: "web-a", wantNumber: 3, wantWritten: true, wantVerbs: []string{"update"}, wantCount: 2},
		{name: "a new template creates a revision",
			revisions: []*appsv1.ControllerRevision{stored("web-a", v1, 1)}, data: v2,
			wantNumber: 2, wantWritten: true, wantVerbs: []string{"create"}, wantCount: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl := newRecorder()
			var collisions int32
			want := New(parent, kind, nil, []byte(tc.data), NextRevisionNumber(tc.revisions), &collisions)
			res, err := Resolve(context.Background(), ctl, parent, want, tc.revisions, &collisions)
			require.NoError(t, err)
			if tc.wantName != "" {
				assert.Equal(t, tc.wantName, res.Update.Name)
			}
			assert.Equal(t, tc.data, string(res.Update.Data.Raw))
			assert.Equal(t, tc.wantNumber, res.Update.Revision)
			assert.Equal(t, tc.wantWritten, res.Written)
			assert.Len(t, res.Revisions, tc.wantCount)
			assert.Equal(t, tc.wantVerbs, ctl.verbs)
		})
	}
}
