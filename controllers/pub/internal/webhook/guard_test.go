package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/pubcontrol"
)

func budget(allowed int32, rv string) *policyv1alpha1.PodUnavailableBudget {
	return &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: rv},
		Status:     policyv1alpha1.PodUnavailableBudgetStatus{UnavailableAllowed: allowed, CurrentAvailable: 5, DesiredAvailable: 4, TotalReplicas: 5},
	}
}

// The budget is taken with the resourceVersion as the lock: a write that
// conflicts is decided again on the budget read back, never blindly
// retried.
func TestTakeDecidesAgainAfterAConflict(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fresh      *policyv1alpha1.PodUnavailableBudget
		wantDenied bool
		wantWrites int
	}{
		{"another request took the last unit", budget(0, "2"), true, 1},
		{"units left after the other write", budget(1, "2"), false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewSimpleClientset(tc.fresh)
			writes := 0
			cs.PrependReactor("update", "podunavailablebudgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "status" {
					return false, nil, nil
				}
				writes++
				obj := a.(k8stesting.UpdateAction).GetObject().(*policyv1alpha1.PodUnavailableBudget)
				if obj.ResourceVersion != tc.fresh.ResourceVersion {
					return true, nil, apierrors.NewConflict(policyv1alpha1.Resource("podunavailablebudgets"), obj.Name, errors.New("stale"))
				}
				return true, obj, nil
			})
			g := &Guard{Client: cs}
			err := g.take(context.Background(), budget(1, "1"), "p1", policyv1alpha1.PubDeleteOperation, false)
			var denied *pubcontrol.DeniedError
			assert.Equal(t, tc.wantDenied, errors.As(err, &denied), "%v", err)
			if !tc.wantDenied {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.wantWrites, writes)
		})
	}
}

func TestTakeDryRunWritesNothing(t *testing.T) {
	cs := fake.NewSimpleClientset(budget(1, "1"))
	g := &Guard{Client: cs}
	require.NoError(t, g.take(context.Background(), budget(1, "1"), "p1", policyv1alpha1.PubEvictOperation, true))
	for _, a := range cs.Actions() {
		assert.NotEqual(t, "update", a.GetVerb(), "dry run")
	}
	var denied *pubcontrol.DeniedError
	assert.ErrorAs(t, g.take(context.Background(), budget(0, "1"), "p1", policyv1alpha1.PubEvictOperation, true), &denied, "a dry run is still refused")
}

// A burst of requests on one budget: exactly the budget is admitted, each
// pod recorded once, in far fewer writes than requests (group commit).
func TestTakeBurst(t *testing.T) {
	// An API server in miniature: status writes conditional on the
	// resourceVersion, which each write moves.
	var mu sync.Mutex
	stored := budget(7, "1")
	writes := 0
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("get", "podunavailablebudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		return true, stored.DeepCopy(), nil
	})
	cs.PrependReactor("update", "podunavailablebudgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		obj := a.(k8stesting.UpdateAction).GetObject().(*policyv1alpha1.PodUnavailableBudget).DeepCopy()
		if obj.ResourceVersion != stored.ResourceVersion {
			return true, nil, apierrors.NewConflict(policyv1alpha1.Resource("podunavailablebudgets"), obj.Name, errors.New("stale"))
		}
		writes++
		obj.ResourceVersion = fmt.Sprint(writes + 1)
		stored = obj
		return true, obj.DeepCopy(), nil
	})
	g := &Guard{Client: cs}
	cached := budget(7, "1")
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if g.take(context.Background(), cached, fmt.Sprintf("p%d", i), policyv1alpha1.PubDeleteOperation, false) == nil {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(7), admitted.Load())
	assert.Len(t, stored.Status.DisruptedPods, 7)
	assert.Equal(t, int32(0), stored.Status.UnavailableAllowed)
	assert.LessOrEqual(t, writes, 7)
	t.Logf("%d writes for 50 requests", writes)
}
