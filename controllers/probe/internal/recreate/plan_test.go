package recreate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	pending    = appsv1alpha1.ContainerRecreateRequestPending
	recreating = appsv1alpha1.ContainerRecreateRequestRecreating
	succeeded  = appsv1alpha1.ContainerRecreateRequestSucceeded
	failedP    = appsv1alpha1.ContainerRecreateRequestFailed
)

type st = appsv1alpha1.ContainerRecreateRequestContainerRecreateState

// request for containers a and b, accepted when they ran a1 and b1.
func request(strategy appsv1alpha1.ContainerRecreateRequestStrategy, states []st, synced string) *appsv1alpha1.ContainerRecreateRequest {
	crr := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "r", CreationTimestamp: metav1.NewTime(t0),
			Annotations: map[string]string{appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey: synced}},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{PodName: "p", Strategy: &strategy, Containers: []appsv1alpha1.ContainerRecreateRequestContainer{
			{Name: "a", StatusContext: &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://a1"}},
			{Name: "b", StatusContext: &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://b1"}},
		}},
		Status: appsv1alpha1.ContainerRecreateRequestStatus{Phase: recreating, ContainerRecreateStates: states},
	}
	return crr
}

func running(id string, age time.Duration) container {
	return container{ID: id, Running: true, CreatedAt: t0.Add(time.Minute - age)}
}

func TestCurrentStates(t *testing.T) {
	now := t0.Add(time.Minute)
	orig := map[string]container{"a": running("a1", time.Hour), "b": running("b1", time.Hour)}
	aNew := map[string]container{"a": running("a2", 5*time.Second), "b": running("b1", time.Hour)}
	aExited := map[string]container{"a": {ID: "a1"}, "b": running("b1", time.Hour)}
	readyA2 := `[{"name":"a","ready":true,"restartCount":1,"containerID":"containerd://a2"}]`
	unreadyA2 := `[{"name":"a","ready":false,"restartCount":1,"containerID":"containerd://a2"}]`
	killedA := []st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: pending}}
	for _, tc := range []struct {
		name     string
		strategy appsv1alpha1.ContainerRecreateRequestStrategy
		states   []st
		synced   string
		current  map[string]container
		want     []st
	}{
		{"fresh request: both pending", appsv1alpha1.ContainerRecreateRequestStrategy{}, nil, "", orig,
			[]st{{Name: "a", Phase: pending}, {Name: "b", Phase: pending}}},
		{"container not on the node", appsv1alpha1.ContainerRecreateRequestStrategy{}, nil, "", map[string]container{"b": running("b1", time.Hour)},
			[]st{{Name: "a", Phase: pending, Message: "not found container on Node"}, {Name: "b", Phase: pending}}},
		{"stop recorded, not done yet (or cut short by a restart): still recreating", appsv1alpha1.ContainerRecreateRequestStrategy{}, killedA, "", orig,
			[]st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: pending}}},
		{"stopped, exited", appsv1alpha1.ContainerRecreateRequestStrategy{}, killedA, "", aExited,
			[]st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: pending}}},
		{"new container, pod not ready yet", appsv1alpha1.ContainerRecreateRequestStrategy{}, killedA, unreadyA2, aNew,
			[]st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: pending}}},
		{"new container ready: succeeded", appsv1alpha1.ContainerRecreateRequestStrategy{}, killedA, readyA2, aNew,
			[]st{{Name: "a", Phase: succeeded, IsKilled: true}, {Name: "b", Phase: pending}}},
		{"ready but younger than minStartedSeconds", appsv1alpha1.ContainerRecreateRequestStrategy{MinStartedSeconds: 10}, killedA, readyA2, aNew,
			[]st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: pending}}},
		{"ready for minStartedSeconds", appsv1alpha1.ContainerRecreateRequestStrategy{MinStartedSeconds: 5}, killedA, readyA2, aNew,
			[]st{{Name: "a", Phase: succeeded, IsKilled: true}, {Name: "b", Phase: pending}}},
		{"restarted by something else: not stopped again, waits for it", appsv1alpha1.ContainerRecreateRequestStrategy{}, nil, readyA2, aNew,
			[]st{{Name: "a", Phase: succeeded}, {Name: "b", Phase: pending}}},
		{"forceRecreate: a container not yet stopped is pending even if it exited", appsv1alpha1.ContainerRecreateRequestStrategy{ForceRecreate: true}, nil, "", aExited,
			[]st{{Name: "a", Phase: pending}, {Name: "b", Phase: pending}}},
		{"finished states stay", appsv1alpha1.ContainerRecreateRequestStrategy{},
			[]st{{Name: "a", Phase: failedP, Message: "kill container error: x"}, {Name: "b", Phase: succeeded, IsKilled: true}}, "", orig,
			[]st{{Name: "a", Phase: failedP, Message: "kill container error: x"}, {Name: "b", Phase: succeeded, IsKilled: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, currentStates(request(tc.strategy, tc.states, tc.synced), tc.current, now))
		})
	}
}

func TestMarkStops(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ordered bool
		states  []st
		want    []st
	}{
		{"unordered: all pending at once", false, []st{{Name: "a", Phase: pending}, {Name: "b", Phase: pending}},
			[]st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: recreating, IsKilled: true}}},
		{"ordered: the first only", true, []st{{Name: "a", Phase: pending}, {Name: "b", Phase: pending}},
			[]st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: pending}}},
		{"ordered: the next once the previous succeeded", true, []st{{Name: "a", Phase: succeeded, IsKilled: true}, {Name: "b", Phase: pending}},
			[]st{{Name: "a", Phase: succeeded, IsKilled: true}, {Name: "b", Phase: recreating, IsKilled: true}}},
		{"ordered: not while the previous recreates", true, []st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: pending}},
			[]st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: pending}}},
		{"unordered: beside one recreating", false, []st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: pending}},
			[]st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: recreating, IsKilled: true}}},
		{"a container not on the node is not marked", false, []st{{Name: "a", Phase: pending, Message: "not found container on Node"}, {Name: "b", Phase: pending}},
			[]st{{Name: "a", Phase: pending, Message: "not found container on Node"}, {Name: "b", Phase: recreating, IsKilled: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			markStops(request(appsv1alpha1.ContainerRecreateRequestStrategy{OrderedRecreate: tc.ordered}, nil, ""), tc.states)
			assert.Equal(t, tc.want, tc.states)
		})
	}
}

// Only the container the request was accepted for is ever stopped: after an agent restart a container already
// stopped (new ID) is left alone, one whose stop was recorded but not carried out is stopped.
func TestStopsDue(t *testing.T) {
	recorded := []st{{Name: "a", Phase: recreating, IsKilled: true}, {Name: "b", Phase: recreating, IsKilled: true}}
	for _, tc := range []struct {
		name    string
		force   bool
		states  []st
		current map[string]container
		want    []string
	}{
		{"nothing recorded", false, nil, map[string]container{"a": running("a1", 0), "b": running("b1", 0)}, nil},
		{"recorded, still the original containers", false, recorded, map[string]container{"a": running("a1", 0), "b": running("b1", 0)}, []string{"a", "b"}},
		{"a already restarted (new ID): only b", false, recorded, map[string]container{"a": running("a2", 0), "b": running("b1", 0)}, []string{"b"}},
		{"a stopped, not yet restarted: not stopped again", false, recorded, map[string]container{"a": {ID: "a1"}, "b": running("b2", 0)}, nil},
		{"forceRecreate stops the original even if not running", true, recorded, map[string]container{"a": {ID: "a1"}, "b": running("b2", 0)}, []string{"a"}},
		{"pending states are not due", false, []st{{Name: "a", Phase: pending}, {Name: "b", Phase: pending}}, map[string]container{"a": running("a1", 0), "b": running("b1", 0)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crr := request(appsv1alpha1.ContainerRecreateRequestStrategy{ForceRecreate: tc.force}, tc.states, "")
			assert.Equal(t, tc.want, stopsDue(crr, tc.current))
		})
	}
}

func TestFailedAndDone(t *testing.T) {
	states := []st{{Name: "a", Phase: failedP}, {Name: "b", Phase: recreating}}
	assert.True(t, failed(request(appsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: "Fail"}, nil, ""), states))
	assert.False(t, failed(request(appsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: "Ignore"}, nil, ""), states))
	assert.False(t, done(states))
	assert.True(t, done([]st{{Name: "a", Phase: failedP}, {Name: "b", Phase: succeeded}}))
}

func TestByPhaseAndAge(t *testing.T) {
	mk := func(name string, phase appsv1alpha1.ContainerRecreateRequestPhase, age time.Duration) *appsv1alpha1.ContainerRecreateRequest {
		return &appsv1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-age))},
			Status: appsv1alpha1.ContainerRecreateRequestStatus{Phase: phase}}
	}
	list := []*appsv1alpha1.ContainerRecreateRequest{mk("new", "", time.Hour), mk("pend", pending, time.Minute), mk("rec", recreating, 0), mk("older", pending, time.Hour)}
	byPhaseAndAge(list)
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"rec", "older", "pend", "new"}, names)
}

func TestRawID(t *testing.T) {
	assert.Equal(t, "abc", rawID("containerd://abc"))
	assert.Equal(t, "abc", rawID("abc"))
}
