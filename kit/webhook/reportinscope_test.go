package webhook

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ReportInScope writes only the objects whose condition changes, skips
// those being deleted and those gone meanwhile, and joins other errors
// naming the object.
func TestReportInScope(t *testing.T) {
	now := time.Now()
	inScope, _ := InScopeConditions(nil, 1, true, "served", now)
	obj := func(name string, deleting bool) *metav1.ObjectMeta {
		m := &metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1}
		if deleting {
			m.DeletionTimestamp = &metav1.Time{Time: now}
		}
		return m
	}
	conds := map[string][]metav1.Condition{"current": inScope}
	written := map[string][]metav1.Condition{}
	objs := []*metav1.ObjectMeta{obj("current", false), obj("new", false), obj("other", false), obj("gone", false), obj("broken", false), obj("terminating", true)}
	err := ReportInScope(context.Background(), objs,
		func(o *metav1.ObjectMeta) []metav1.Condition { return conds[o.Name] },
		func(o *metav1.ObjectMeta) (bool, string) { return true, "served" },
		func(_ context.Context, o *metav1.ObjectMeta, c []metav1.Condition) error {
			switch o.Name {
			case "gone":
				return apierrors.NewNotFound(schema.GroupResource{Resource: "things"}, o.Name)
			case "broken":
				return errors.New("boom")
			}
			written[o.Name] = c
			return nil
		}, now)
	assert.ErrorContains(t, err, "set WebhookInScope of ns/broken: boom")
	assert.NotContains(t, err.Error(), "gone")
	assert.Contains(t, written, "new")
	assert.Contains(t, written, "other")
	assert.NotContains(t, written, "current", "unchanged: not written")
	assert.NotContains(t, written, "terminating", "being deleted: not written")
	assert.Equal(t, metav1.ConditionTrue, written["new"][0].Status)
}
