package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestRevisionsToDelete(t *testing.T) {
	rev := func(name string, n int64) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Revision: n}
	}
	revs := []*appsv1.ControllerRevision{rev("r1", 1), rev("r2", 2), rev("r3", 3), rev("r4", 4)}
	names := func(rs []*appsv1.ControllerRevision) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	assert.Equal(t, []string{"r1", "r2"}, names(revisionsToDelete(revs, sets.New("r4"), 2)))
	assert.Equal(t, []string{"r2", "r3"}, names(revisionsToDelete(revs, sets.New("r1"), 2)), "a revision a pod uses stays")
	assert.Equal(t, []string{"r2"}, names(revisionsToDelete(revs, sets.New("r1", "r3"), 1)), "live ones may exceed the limit; the newest always stays")
	assert.Nil(t, revisionsToDelete(revs, sets.New[string](), 10))
	assert.Equal(t, []string{"r1", "r2", "r3"}, names(revisionsToDelete(revs, sets.New[string](), 0)), "limit 0 counts as 1")
}
