package lifecycle

import (
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0  = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now = time.Date(2026, 1, 2, 5, 4, 5, 0, time.FixedZone("UTC+1", 3600)) // 04:04:05Z
)

const (
	nowStamp  = "2026-01-02T04:04:05Z"
	hookLabel = "example.com/hook"
	hookFin   = "example.com/hook-fin"
	otherFin  = "example.com/other"
)

type podOpt func(*corev1.Pod)

func state(s pub.LifecycleStateType) podOpt {
	return func(p *corev1.Pod) { p.Labels[pub.LifecycleStateKey] = string(s) }
}
func label(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }
func finalizer(f string) podOpt {
	return func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, f) }
}
func hookedLabel() podOpt { return label(hookLabel, "true") }
func hookedFin() podOpt   { return finalizer(hookFin) }
func onNode(n string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeName = n }
}

// gated gives the pod the KruisePodReady gate, True (no keys).
func gated() podOpt {
	return func(p *corev1.Pod) {
		p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: podreadiness.ConditionType})
		setCond(p, corev1.PodCondition{Type: podreadiness.ConditionType, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)})
	}
}

// holding gives a gated pod the given lifecycle keys (condition False, Ready False).
func holding(keys ...podreadiness.Key) podOpt {
	return func(p *corev1.Pod) {
		gated()(p)
		setCond(p, corev1.PodCondition{Type: podreadiness.ConditionType, Status: corev1.ConditionFalse,
			Message: podreadiness.FormatMessage(keys), LastTransitionTime: metav1.NewTime(t0)})
		setCond(p, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0)})
	}
}

func setCond(p *corev1.Pod, c corev1.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

func newPod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "5", Labels: map[string]string{"app": "demo"}},
	}
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func hook(mark bool) *pub.LifecycleHook {
	return &pub.LifecycleHook{LabelsHandler: map[string]string{hookLabel: "true"}, FinalizersHandler: []string{hookFin}, MarkPodNotReady: mark}
}

func TestIsHooked(t *testing.T) {
	h := hook(false)
	for _, tc := range []struct {
		name              string
		hook              *pub.LifecycleHook
		pod               *corev1.Pod
		hooked, allHooked bool
	}{
		{name: "nil hook", hook: nil, pod: newPod(hookedLabel(), hookedFin())},
		{name: "nil pod", hook: h, pod: nil},
		{name: "empty hook", hook: &pub.LifecycleHook{}, pod: newPod(), allHooked: true},
		{name: "nothing", hook: h, pod: newPod()},
		{name: "label only", hook: h, pod: newPod(hookedLabel()), hooked: true},
		{name: "finalizer only", hook: h, pod: newPod(hookedFin()), hooked: true},
		{name: "both", hook: h, pod: newPod(hookedLabel(), hookedFin()), hooked: true, allHooked: true},
		{name: "label with another value", hook: h, pod: newPod(label(hookLabel, "false"))},
		{name: "label with another value and finalizer", hook: h, pod: newPod(label(hookLabel, "false"), hookedFin()), hooked: true},
		{name: "other finalizer", hook: h, pod: newPod(finalizer(otherFin))},
		{name: "empty label value required and present", hook: &pub.LifecycleHook{LabelsHandler: map[string]string{hookLabel: ""}},
			pod: newPod(label(hookLabel, "")), hooked: true, allHooked: true},
		{name: "empty label value required, label absent", hook: &pub.LifecycleHook{LabelsHandler: map[string]string{hookLabel: ""}},
			pod: newPod()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.hooked, IsHooked(tc.hook, tc.pod), "IsHooked")
			assert.Equal(t, tc.allHooked, IsAllHooked(tc.hook, tc.pod), "IsAllHooked")
		})
	}
}

func TestStateAndMarks(t *testing.T) {
	assert.Equal(t, pub.LifecycleStateType(""), State(newPod()))
	assert.Equal(t, pub.LifecycleStateUpdated, State(newPod(state(pub.LifecycleStateUpdated))))

	assert.False(t, MarksPodNotReady(nil))
	assert.False(t, MarksPodNotReady(&pub.Lifecycle{PreDelete: hook(false), InPlaceUpdate: hook(false), PreNormal: hook(true)}))
	assert.True(t, MarksPodNotReady(&pub.Lifecycle{PreDelete: hook(true)}))
	assert.True(t, MarksPodNotReady(&pub.Lifecycle{InPlaceUpdate: hook(true)}))

	assert.Equal(t, podreadiness.Key{UserAgent: "Lifecycle", Key: "preDeleteHook"}, PreDeleteKey())
	assert.Equal(t, podreadiness.Key{UserAgent: "Lifecycle", Key: "preUpdateHook"}, PreUpdateKey())
}

func TestMetadataPatch(t *testing.T) {
	assert.Nil(t, Patch{}.MetadataPatch())
	assert.Nil(t, Patch{AddNotReady: []podreadiness.Key{PreDeleteKey()}}.MetadataPatch())
	assert.True(t, Patch{}.IsZero())
	assert.False(t, Patch{RemoveNotReady: []podreadiness.Key{PreDeleteKey()}}.IsZero())

	assert.JSONEq(t,
		`{"metadata":{"labels":{"lifecycle.apps.kruise.io/state":"PreparingDelete"},"annotations":{"lifecycle.apps.kruise.io/timestamp":"2026-01-02T04:04:05Z"}}}`,
		string(Patch{State: pub.LifecycleStatePreparingDelete, Timestamp: now}.MetadataPatch()))

	assert.JSONEq(t,
		`{"metadata":{"labels":{"lifecycle.apps.kruise.io/state":"PreparingUpdate","example.com/hook":"true"},
		  "annotations":{"lifecycle.apps.kruise.io/timestamp":"2026-01-02T04:04:05Z"},"finalizers":["example.com/hook-fin"]}}`,
		string(Patch{State: pub.LifecycleStatePreparingUpdate, Timestamp: now, Labels: map[string]string{hookLabel: "true"}, Finalizers: []string{hookFin}}.MetadataPatch()))
}

func TestApplyMetadata(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{hookFin}}} // nil maps
	Patch{State: pub.LifecycleStateUpdating, Timestamp: now, Labels: map[string]string{hookLabel: "true"}, Finalizers: []string{hookFin, otherFin}}.ApplyMetadata(pod)
	assert.Equal(t, map[string]string{pub.LifecycleStateKey: "Updating", hookLabel: "true"}, pod.Labels)
	assert.Equal(t, map[string]string{pub.LifecycleTimestampKey: nowStamp}, pod.Annotations)
	assert.Equal(t, []string{hookFin, otherFin}, pod.Finalizers)

	untouched := newPod()
	before := untouched.DeepCopy()
	Patch{AddNotReady: []podreadiness.Key{PreDeleteKey()}}.ApplyMetadata(untouched)
	assert.Equal(t, before, untouched, "readiness keys are not metadata")
}

func TestSetState(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		to   pub.LifecycleStateType
		mark bool
		want Patch
	}{
		{name: "plain move", pod: newPod(state(pub.LifecycleStateNormal)), to: pub.LifecycleStatePreparingDelete,
			want: Patch{State: pub.LifecycleStatePreparingDelete, Timestamp: now}},
		{name: "same state: nothing", pod: newPod(state(pub.LifecycleStateNormal)), to: pub.LifecycleStateNormal},
		{name: "PreparingDelete with mark adds preDelete key", pod: newPod(gated()), to: pub.LifecycleStatePreparingDelete, mark: true,
			want: Patch{State: pub.LifecycleStatePreparingDelete, Timestamp: now, AddNotReady: []podreadiness.Key{PreDeleteKey()}}},
		{name: "PreparingUpdate with mark adds preUpdate key", pod: newPod(gated(), state(pub.LifecycleStateNormal)), to: pub.LifecycleStatePreparingUpdate, mark: true,
			want: Patch{State: pub.LifecycleStatePreparingUpdate, Timestamp: now, AddNotReady: []podreadiness.Key{PreUpdateKey()}}},
		{name: "mark without the gate: no key", pod: newPod(), to: pub.LifecycleStatePreparingUpdate, mark: true,
			want: Patch{State: pub.LifecycleStatePreparingUpdate, Timestamp: now}},
		{name: "no mark: no key", pod: newPod(gated()), to: pub.LifecycleStatePreparingDelete,
			want: Patch{State: pub.LifecycleStatePreparingDelete, Timestamp: now}},
		{name: "same state with mark restores a lost key", pod: newPod(gated(), state(pub.LifecycleStatePreparingDelete)), to: pub.LifecycleStatePreparingDelete, mark: true,
			want: Patch{AddNotReady: []podreadiness.Key{PreDeleteKey()}}},
		{name: "same state, key held: nothing", pod: newPod(holding(PreDeleteKey()), state(pub.LifecycleStatePreparingDelete)), to: pub.LifecycleStatePreparingDelete, mark: true},
		{name: "Updated removes preUpdate key", pod: newPod(holding(PreUpdateKey()), state(pub.LifecycleStateUpdating)), to: pub.LifecycleStateUpdated, mark: true,
			want: Patch{State: pub.LifecycleStateUpdated, Timestamp: now, RemoveNotReady: []podreadiness.Key{PreUpdateKey()}}},
		{name: "Updated removes preUpdate key without mark too", pod: newPod(holding(PreUpdateKey()), state(pub.LifecycleStateUpdating)), to: pub.LifecycleStateUpdated,
			want: Patch{State: pub.LifecycleStateUpdated, Timestamp: now, RemoveNotReady: []podreadiness.Key{PreUpdateKey()}}},
		{name: "Updated keeps preDelete key", pod: newPod(holding(PreDeleteKey()), state(pub.LifecycleStateUpdating)), to: pub.LifecycleStateUpdated,
			want: Patch{State: pub.LifecycleStateUpdated, Timestamp: now}},
		{name: "Normal removes both keys", pod: newPod(holding(PreDeleteKey(), PreUpdateKey(), podreadiness.Key{UserAgent: "ContainerRecreateRequest", Key: "x"}), state(pub.LifecycleStateUpdated)),
			to:   pub.LifecycleStateNormal,
			want: Patch{State: pub.LifecycleStateNormal, Timestamp: now, RemoveNotReady: []podreadiness.Key{PreDeleteKey(), PreUpdateKey()}}},
		{name: "PreparingNormal removes both keys", pod: newPod(holding(PreDeleteKey()), state(pub.LifecycleStatePreparingDelete)),
			to:   pub.LifecycleStatePreparingNormal,
			want: Patch{State: pub.LifecycleStatePreparingNormal, Timestamp: now, RemoveNotReady: []podreadiness.Key{PreDeleteKey()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			got := SetState(tc.pod, tc.to, tc.mark, now)
			assert.Equal(t, before, tc.pod, "input pod modified")
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSetStateWithHook(t *testing.T) {
	// Updated → PreparingUpdate re-adds what is missing of the hook.
	pod := newPod(gated(), state(pub.LifecycleStateUpdated), finalizer(otherFin))
	before := pod.DeepCopy()
	got := SetStateWithHook(pod, pub.LifecycleStatePreparingUpdate, hook(true), now)
	assert.Equal(t, before, pod)
	assert.Equal(t, Patch{
		State: pub.LifecycleStatePreparingUpdate, Timestamp: now,
		Labels: map[string]string{hookLabel: "true"}, Finalizers: []string{hookFin},
		AddNotReady: []podreadiness.Key{PreUpdateKey()},
	}, got)

	// Only the missing parts.
	got = SetStateWithHook(newPod(state(pub.LifecycleStateUpdated), hookedLabel()), pub.LifecycleStatePreparingUpdate, hook(false), now)
	assert.Equal(t, Patch{State: pub.LifecycleStatePreparingUpdate, Timestamp: now, Finalizers: []string{hookFin}}, got)
	got = SetStateWithHook(newPod(state(pub.LifecycleStateUpdated), label(hookLabel, "no"), hookedFin()), pub.LifecycleStatePreparingUpdate, hook(false), now)
	assert.Equal(t, Patch{State: pub.LifecycleStatePreparingUpdate, Timestamp: now, Labels: map[string]string{hookLabel: "true"}}, got)

	// Already in the state: the hook is not touched (as OpenKruise).
	got = SetStateWithHook(newPod(state(pub.LifecycleStatePreparingUpdate)), pub.LifecycleStatePreparingUpdate, hook(false), now)
	assert.True(t, got.IsZero(), "%+v", got)

	// Nil hook: plain SetState.
	got = SetStateWithHook(newPod(gated(), state(pub.LifecycleStateUpdated)), pub.LifecycleStatePreparingUpdate, nil, now)
	assert.Equal(t, Patch{State: pub.LifecycleStatePreparingUpdate, Timestamp: now}, got)
}
