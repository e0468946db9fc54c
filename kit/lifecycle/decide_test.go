package lifecycle

import (
	"testing"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

// want is the expected decision; the patch is spelled out field by field so a
// row reads as the transition it tests.
type want struct {
	action     Action
	to         pub.LifecycleStateType // Patch.State ("" = unchanged)
	add        []podreadiness.Key
	remove     []podreadiness.Key
	labels     map[string]string
	finalizers []string
}

func (w want) patch() Patch {
	p := Patch{State: w.to, AddNotReady: w.add, RemoveNotReady: w.remove, Labels: w.labels, Finalizers: w.finalizers}
	if w.to != "" {
		p.Timestamp = now
	}
	return p
}

func keys(k ...podreadiness.Key) []podreadiness.Key { return k }

func TestDecide(t *testing.T) {
	const (
		preparingNormal = pub.LifecycleStatePreparingNormal
		normal          = pub.LifecycleStateNormal
		preparingUpdate = pub.LifecycleStatePreparingUpdate
		updating        = pub.LifecycleStateUpdating
		updated         = pub.LifecycleStateUpdated
		preparingDelete = pub.LifecycleStatePreparingDelete
	)
	preDelete := func(mark bool) *pub.Lifecycle { return &pub.Lifecycle{PreDelete: hook(mark)} }
	inPlace := func(mark bool) *pub.Lifecycle { return &pub.Lifecycle{InPlaceUpdate: hook(mark)} }
	preNormal := &pub.Lifecycle{PreNormal: hook(false)}
	del := Request{Op: OpDelete}
	upd := Request{Op: OpInPlaceUpdate}
	refresh := Request{Op: OpBecomeNormal}
	cancel := Request{Op: OpCancelDelete}

	for _, tc := range []struct {
		name string
		lc   *pub.Lifecycle
		pod  *corev1.Pod
		req  Request
		want want
	}{
		// --- delete -------------------------------------------------------
		{name: "delete/no lifecycle: proceed", lc: nil, pod: newPod(state(normal), hookedLabel()), req: del,
			want: want{action: ActionProceed}},
		{name: "delete/other hooks only: proceed", lc: inPlace(true), pod: newPod(state(normal), hookedLabel()), req: del,
			want: want{action: ActionProceed}},
		{name: "delete/not hooked: proceed", lc: preDelete(false), pod: newPod(state(normal)), req: del,
			want: want{action: ActionProceed}},
		{name: "delete/label value differs: not hooked, proceed", lc: preDelete(false), pod: newPod(state(normal), label(hookLabel, "false")), req: del,
			want: want{action: ActionProceed}},
		{name: "delete/hooked by label: move to PreparingDelete", lc: preDelete(false), pod: newPod(gated(), state(normal), hookedLabel()), req: del,
			want: want{action: ActionPatch, to: preparingDelete}},
		{name: "delete/hooked by finalizer: move to PreparingDelete", lc: preDelete(false), pod: newPod(state(normal), hookedFin()), req: del,
			want: want{action: ActionPatch, to: preparingDelete}},
		{name: "delete/hooked, markPodNotReady: move and add preDelete key", lc: preDelete(true), pod: newPod(gated(), state(normal), hookedLabel()), req: del,
			want: want{action: ActionPatch, to: preparingDelete, add: keys(PreDeleteKey())}},
		{name: "delete/markPodNotReady without the gate: move only", lc: preDelete(true), pod: newPod(state(normal), hookedLabel()), req: del,
			want: want{action: ActionPatch, to: preparingDelete}},
		{name: "delete/from any state (Updating)", lc: preDelete(true), pod: newPod(gated(), state(updating), hookedFin()), req: del,
			want: want{action: ActionPatch, to: preparingDelete, add: keys(PreDeleteKey())}},
		{name: "delete/from an unlabelled pod", lc: preDelete(false), pod: newPod(hookedFin()), req: del,
			want: want{action: ActionPatch, to: preparingDelete}},
		{name: "delete/PreparingDelete, still hooked: wait", lc: preDelete(false), pod: newPod(state(preparingDelete), hookedLabel()), req: del,
			want: want{action: ActionWait}},
		{name: "delete/PreparingDelete, hooked, key held: wait", lc: preDelete(true), pod: newPod(holding(PreDeleteKey()), state(preparingDelete), hookedLabel()), req: del,
			want: want{action: ActionWait}},
		{name: "delete/PreparingDelete, hooked, key lost: restore it", lc: preDelete(true), pod: newPod(gated(), state(preparingDelete), hookedLabel()), req: del,
			want: want{action: ActionPatch, add: keys(PreDeleteKey())}},
		{name: "delete/PreparingDelete, hook released: proceed", lc: preDelete(true), pod: newPod(holding(PreDeleteKey()), state(preparingDelete)), req: del,
			want: want{action: ActionProceed}},
		{name: "delete/PreparingDelete, hook removed from workload: proceed", lc: inPlace(false), pod: newPod(state(preparingDelete), hookedLabel()), req: del,
			want: want{action: ActionProceed}},

		// --- in-place update ---------------------------------------------
		{name: "update/no lifecycle: proceed, Updating", lc: nil, pod: newPod(state(normal)), req: upd,
			want: want{action: ActionProceed, to: updating}},
		{name: "update/not hooked: proceed, Updating", lc: inPlace(true), pod: newPod(gated(), state(normal)), req: upd,
			want: want{action: ActionProceed, to: updating}},
		{name: "update/hooked: move to PreparingUpdate", lc: inPlace(false), pod: newPod(gated(), state(normal), hookedLabel()), req: upd,
			want: want{action: ActionPatch, to: preparingUpdate}},
		{name: "update/hooked, markPodNotReady: move and add preUpdate key", lc: inPlace(true), pod: newPod(gated(), state(normal), hookedFin()), req: upd,
			want: want{action: ActionPatch, to: preparingUpdate, add: keys(PreUpdateKey())}},
		{name: "update/PreparingNormal, hooked: move to PreparingUpdate", lc: inPlace(false), pod: newPod(state(preparingNormal), hookedLabel()), req: upd,
			want: want{action: ActionPatch, to: preparingUpdate}},
		{name: "update/unlabelled, hooked: move to PreparingUpdate", lc: inPlace(false), pod: newPod(hookedLabel()), req: upd,
			want: want{action: ActionPatch, to: preparingUpdate}},
		{name: "update/unlabelled, not hooked: proceed", lc: inPlace(false), pod: newPod(), req: upd,
			want: want{action: ActionProceed, to: updating}},
		{name: "update/PreparingUpdate, still hooked: wait", lc: inPlace(false), pod: newPod(state(preparingUpdate), hookedLabel()), req: upd,
			want: want{action: ActionWait}},
		{name: "update/PreparingUpdate, hooked, key held: wait", lc: inPlace(true), pod: newPod(holding(PreUpdateKey()), state(preparingUpdate), hookedLabel()), req: upd,
			want: want{action: ActionWait}},
		{name: "update/PreparingUpdate, hooked, key lost: restore it", lc: inPlace(true), pod: newPod(gated(), state(preparingUpdate), hookedLabel()), req: upd,
			want: want{action: ActionPatch, add: keys(PreUpdateKey())}},
		{name: "update/PreparingUpdate, released: proceed, Updating (key kept until Updated)", lc: inPlace(true), pod: newPod(holding(PreUpdateKey()), state(preparingUpdate)), req: upd,
			want: want{action: ActionProceed, to: updating}},
		{name: "update/Updated, next revision: re-add hook, PreparingUpdate", lc: inPlace(false), pod: newPod(state(updated)), req: upd,
			want: want{action: ActionPatch, to: preparingUpdate, labels: map[string]string{hookLabel: "true"}, finalizers: []string{hookFin}}},
		{name: "update/Updated, markPodNotReady: re-add hook and key", lc: inPlace(true), pod: newPod(gated(), state(updated), hookedLabel()), req: upd,
			want: want{action: ActionPatch, to: preparingUpdate, finalizers: []string{hookFin}, add: keys(PreUpdateKey())}},
		{name: "update/Updated, no hook: proceed", lc: preDelete(false), pod: newPod(state(updated)), req: upd,
			want: want{action: ActionProceed, to: updating}},
		{name: "update/Updating: proceed, state kept", lc: inPlace(true), pod: newPod(state(updating), hookedLabel()), req: upd,
			want: want{action: ActionProceed}},
		{name: "update/PreparingDelete: refuse", lc: inPlace(false), pod: newPod(state(preparingDelete)), req: upd,
			want: want{action: ActionRefuse}},
		{name: "update/unknown state: refuse", lc: nil, pod: newPod(state("Bogus")), req: upd,
			want: want{action: ActionRefuse}},

		// --- become normal -------------------------------------------------
		{name: "normal/PreparingNormal, no lifecycle: Normal", lc: nil, pod: newPod(state(preparingNormal)), req: refresh,
			want: want{action: ActionPatch, to: normal}},
		{name: "normal/PreparingNormal, waits for scheduling", lc: nil, pod: newPod(state(preparingNormal)),
			req:  Request{Op: OpBecomeNormal, WaitForScheduling: true},
			want: want{action: ActionWait}},
		{name: "normal/PreparingNormal, scheduled: Normal", lc: nil, pod: newPod(state(preparingNormal), onNode("n1")),
			req:  Request{Op: OpBecomeNormal, WaitForScheduling: true},
			want: want{action: ActionPatch, to: normal}},
		{name: "normal/PreparingNormal, preNormal partly applied: wait", lc: preNormal, pod: newPod(state(preparingNormal), hookedLabel(), onNode("n1")), req: refresh,
			want: want{action: ActionWait}},
		{name: "normal/PreparingNormal, preNormal applied: Normal (scheduling not required)", lc: preNormal, pod: newPod(state(preparingNormal), hookedLabel(), hookedFin()),
			req:  Request{Op: OpBecomeNormal, WaitForScheduling: true},
			want: want{action: ActionPatch, to: normal}},
		{name: "normal/Updating, not completed: wait", lc: inPlace(true), pod: newPod(state(updating)), req: refresh,
			want: want{action: ActionWait}},
		{name: "normal/Updating completed, hook not re-applied: Updated, key released", lc: inPlace(true), pod: newPod(holding(PreUpdateKey()), state(updating), hookedLabel()),
			req:  Request{Op: OpBecomeNormal, UpdateCompleted: true},
			want: want{action: ActionPatch, to: updated, remove: keys(PreUpdateKey())}},
		{name: "normal/Updating completed, markPodNotReady turned off: key still released", lc: inPlace(false), pod: newPod(holding(PreUpdateKey()), state(updating)),
			req:  Request{Op: OpBecomeNormal, UpdateCompleted: true},
			want: want{action: ActionPatch, to: updated, remove: keys(PreUpdateKey())}},
		{name: "normal/Updating completed, hook all applied: Normal", lc: inPlace(true), pod: newPod(holding(PreUpdateKey()), state(updating), hookedLabel(), hookedFin()),
			req:  Request{Op: OpBecomeNormal, UpdateCompleted: true},
			want: want{action: ActionPatch, to: normal, remove: keys(PreUpdateKey())}},
		{name: "normal/Updating completed, no hook: Normal", lc: nil, pod: newPod(state(updating)),
			req:  Request{Op: OpBecomeNormal, UpdateCompleted: true},
			want: want{action: ActionPatch, to: normal}},
		{name: "normal/PreparingUpdate, not at update revision: none", lc: inPlace(true), pod: newPod(state(preparingUpdate), hookedLabel()), req: refresh,
			want: want{action: ActionNone}},
		{name: "normal/PreparingUpdate rolled back, hook released: Updated", lc: inPlace(true), pod: newPod(holding(PreUpdateKey()), state(preparingUpdate)),
			req:  Request{Op: OpBecomeNormal, AtUpdateRevision: true},
			want: want{action: ActionPatch, to: updated, remove: keys(PreUpdateKey())}},
		{name: "normal/PreparingUpdate rolled back, still all hooked: Normal, key released", lc: inPlace(true), pod: newPod(holding(PreUpdateKey()), state(preparingUpdate), hookedLabel(), hookedFin()),
			req:  Request{Op: OpBecomeNormal, AtUpdateRevision: true},
			want: want{action: ActionPatch, to: normal, remove: keys(PreUpdateKey())}},
		{name: "normal/Updated, hook not re-applied: wait", lc: inPlace(false), pod: newPod(state(updated), hookedLabel()), req: refresh,
			want: want{action: ActionWait}},
		{name: "normal/Updated, stale preUpdate key: release it, stay", lc: inPlace(false), pod: newPod(holding(PreUpdateKey()), state(updated)), req: refresh,
			want: want{action: ActionPatch, remove: keys(PreUpdateKey())}},
		{name: "normal/Updated, hook re-applied: Normal", lc: inPlace(true), pod: newPod(state(updated), hookedLabel(), hookedFin()), req: refresh,
			want: want{action: ActionPatch, to: normal}},
		{name: "normal/Updated, no hook: Normal", lc: nil, pod: newPod(state(updated)), req: refresh,
			want: want{action: ActionPatch, to: normal}},
		{name: "normal/Normal: none", lc: inPlace(true), pod: newPod(gated(), state(normal)), req: refresh,
			want: want{action: ActionNone}},
		{name: "normal/Normal holding a lifecycle key: release it", lc: inPlace(true), pod: newPod(holding(PreUpdateKey()), state(normal)), req: refresh,
			want: want{action: ActionPatch, remove: keys(PreUpdateKey())}},
		{name: "normal/unlabelled: none", lc: preNormal, pod: newPod(), req: refresh,
			want: want{action: ActionNone}},
		{name: "normal/PreparingDelete: none", lc: preDelete(true), pod: newPod(holding(PreDeleteKey()), state(preparingDelete)), req: refresh,
			want: want{action: ActionNone}},

		// --- cancel delete -----------------------------------------------
		{name: "cancel/not PreparingDelete: none", lc: preDelete(false), pod: newPod(state(normal)), req: cancel,
			want: want{action: ActionNone}},
		{name: "cancel/PreparingDelete: back to PreparingNormal", lc: preDelete(false), pod: newPod(state(preparingDelete), hookedLabel()), req: cancel,
			want: want{action: ActionPatch, to: preparingNormal}},
		{name: "cancel/preDelete markPodNotReady: refuse", lc: preDelete(true), pod: newPod(state(preparingDelete)), req: cancel,
			want: want{action: ActionRefuse}},
		{name: "cancel/inPlaceUpdate markPodNotReady: refuse", lc: &pub.Lifecycle{PreDelete: hook(false), InPlaceUpdate: hook(true)}, pod: newPod(state(preparingDelete)), req: cancel,
			want: want{action: ActionRefuse}},

		{name: "unknown operation: refuse", lc: nil, pod: newPod(), req: Request{Op: 42}, want: want{action: ActionRefuse}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			d := Decide(tc.lc, tc.pod, tc.req, now)
			assert.Equal(t, before, tc.pod, "input pod modified")
			assert.Equal(t, tc.want.action, d.Action, "action (reason %q)", d.Reason)
			assert.Equal(t, tc.want.patch(), d.Patch)
			assert.NotEmpty(t, d.Reason)
		})
	}
}

func TestStrings(t *testing.T) {
	assert.Equal(t, "Patch", ActionPatch.String())
	assert.Equal(t, "Action(9)", Action(9).String())
	assert.Equal(t, "InPlaceUpdate", OpInPlaceUpdate.String())
	assert.Equal(t, "Operation(0)", Operation(0).String())
}
