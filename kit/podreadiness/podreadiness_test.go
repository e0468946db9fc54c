package podreadiness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0  = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now = t0.Add(time.Hour)

	lifecycleDelete = Key{UserAgent: "Lifecycle", Key: "preDeleteHook"}
	lifecycleUpdate = Key{UserAgent: "Lifecycle", Key: "preUpdateHook"}
	crr             = Key{UserAgent: "ContainerRecreateRequest", Key: "crr-1"}
)

const inPlaceUpdateReady corev1.PodConditionType = "InPlaceUpdateReady"

func cond(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(t0)}
}

func kruiseCond(s corev1.ConditionStatus, msg string) corev1.PodCondition {
	c := cond(ConditionType, s)
	c.Message = msg
	return c
}

// newPod returns a pod with the given readiness gates and conditions.
func newPod(gates []corev1.PodConditionType, conds ...corev1.PodCondition) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "7"}}
	for _, g := range gates {
		p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
	}
	p.Status.Conditions = conds
	return p
}

// readyPod: kubelet says ready, KruisePodReady gate True.
func readyPod(extra ...corev1.PodCondition) *corev1.Pod {
	conds := []corev1.PodCondition{
		cond(corev1.ContainersReady, corev1.ConditionTrue),
		cond(corev1.PodReady, corev1.ConditionTrue),
		kruiseCond(corev1.ConditionTrue, ""),
	}
	return newPod([]corev1.PodConditionType{ConditionType}, append(conds, extra...)...)
}

// withKruise replaces the KruisePodReady condition of a readyPod and sets Ready.
func withKruise(p *corev1.Pod, kruise corev1.PodCondition, ready corev1.ConditionStatus) *corev1.Pod {
	p.Status.Conditions[1].Status = ready
	p.Status.Conditions[2] = kruise
	return p
}

func find(conds []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	return findCondition(conds, t)
}

func TestMessageFormat(t *testing.T) {
	// Unsorted with a duplicate: written sorted by userAgent then key, once each.
	keys := []Key{lifecycleUpdate, crr, lifecycleDelete, lifecycleUpdate}
	orig := append([]Key(nil), keys...)
	msg := FormatMessage(keys)
	assert.Equal(t,
		`[{"userAgent":"ContainerRecreateRequest","key":"crr-1"},{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]`,
		msg)
	assert.Equal(t, orig, keys, "FormatMessage must not reorder its input")

	got, err := ParseMessage(msg)
	require.NoError(t, err)
	assert.Equal(t, []Key{crr, lifecycleDelete, lifecycleUpdate}, got)

	assert.Equal(t, "[]", FormatMessage(nil))
	assert.Equal(t, "[]", FormatMessage([]Key{}))
}

func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		msg     string
		want    []Key
		wantErr bool
	}{
		{name: "empty string", msg: ""},
		{name: "empty list", msg: "[]", want: []Key{}},
		// As OpenKruise writes it: field names userAgent and key.
		{name: "openkruise message", msg: `[{"userAgent":"Lifecycle","key":"preUpdateHook"},{"userAgent":"Lifecycle","key":"preDeleteHook"}]`,
			want: []Key{lifecycleDelete, lifecycleUpdate}},
		{name: "not json", msg: "containers restarting", wantErr: true},
		{name: "object not list", msg: `{"userAgent":"Lifecycle","key":"x"}`, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMessage(tc.msg)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestAddNotReadyKey(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		key         Key
		wantChanged bool
		wantKruise  *corev1.PodCondition // nil: no condition expected
		wantReady   corev1.ConditionStatus
	}{
		{
			name:        "condition True (set by the pod-readiness controller) turns False",
			pod:         readyPod(),
			key:         lifecycleDelete,
			wantChanged: true,
			wantKruise: &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now),
				Message: `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
			wantReady: corev1.ConditionFalse,
		},
		{
			name: "condition missing is created False",
			pod: newPod([]corev1.PodConditionType{ConditionType},
				cond(corev1.ContainersReady, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionFalse)),
			key:         lifecycleUpdate,
			wantChanged: true,
			wantKruise: &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now),
				Message: `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`},
			wantReady: corev1.ConditionFalse,
		},
		{
			name:        "second key merges sorted, status and transition time kept",
			pod:         withKruise(readyPod(), kruiseCond(corev1.ConditionFalse, `[{"userAgent":"ContainerRecreateRequest","key":"crr-1"}]`), corev1.ConditionFalse),
			key:         lifecycleDelete,
			wantChanged: true,
			wantKruise: &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0),
				Message: `[{"userAgent":"ContainerRecreateRequest","key":"crr-1"},{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
			wantReady: corev1.ConditionFalse,
		},
		{
			name:       "key already held: nothing to do",
			pod:        newPod([]corev1.PodConditionType{ConditionType}, kruiseCond(corev1.ConditionFalse, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`)),
			key:        lifecycleDelete,
			wantKruise: &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0), Message: `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
		},
		{
			name:        "key in message but status True is repaired to False",
			pod:         newPod([]corev1.PodConditionType{ConditionType}, kruiseCond(corev1.ConditionTrue, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`)),
			key:         lifecycleDelete,
			wantChanged: true,
			wantKruise:  &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now), Message: `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
		},
		{
			name:        "undecodable message is replaced",
			pod:         newPod([]corev1.PodConditionType{ConditionType}, kruiseCond(corev1.ConditionTrue, "garbage")),
			key:         lifecycleDelete,
			wantChanged: true,
			wantKruise:  &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now), Message: `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
		},
		{
			name: "no readiness gate: not written (as OpenKruise)",
			pod:  newPod(nil, cond(corev1.ContainersReady, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionTrue)),
			key:  lifecycleDelete,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod
			before := pod.DeepCopy()
			changed, conds := AddNotReadyKey(pod, tc.key, now)
			assert.Equal(t, before, pod, "input pod modified")
			assert.Equal(t, tc.wantChanged, changed)
			if tc.wantKruise == nil {
				assert.Nil(t, find(conds, ConditionType))
			} else {
				assert.Equal(t, tc.wantKruise, find(conds, ConditionType))
			}
			if !tc.wantChanged {
				assert.Equal(t, pod.Status.Conditions, conds, "unchanged conditions expected")
			}
			if tc.wantReady != "" {
				require.NotNil(t, find(conds, corev1.PodReady))
				assert.Equal(t, tc.wantReady, find(conds, corev1.PodReady).Status)
			}
		})
	}
}

func TestAddNotReadyKeyTurnsReadyFalseInSameWrite(t *testing.T) {
	pod := readyPod()
	changed, conds := AddNotReadyKey(pod, lifecycleDelete, now)
	require.True(t, changed)
	assert.Equal(t, corev1.PodCondition{
		Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now),
		Reason:  ReasonReadinessGatesNotReady,
		Message: `the status of pod readiness gate "KruisePodReady" is not "True", but False`,
	}, *find(conds, corev1.PodReady))
}

func TestRemoveNotReadyKey(t *testing.T) {
	gates := []corev1.PodConditionType{ConditionType, inPlaceUpdateReady}
	base := func(kruise corev1.PodCondition, inPlace corev1.ConditionStatus) *corev1.Pod {
		return newPod(gates,
			cond(corev1.ContainersReady, corev1.ConditionTrue),
			cond(corev1.PodReady, corev1.ConditionFalse),
			cond(inPlaceUpdateReady, inPlace),
			kruise)
	}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		key         Key
		wantChanged bool
		wantKruise  *corev1.PodCondition
		wantReady   corev1.ConditionStatus
	}{
		{
			name:        "last key: True, empty list, Ready True",
			pod:         base(kruiseCond(corev1.ConditionFalse, `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`), corev1.ConditionTrue),
			key:         lifecycleUpdate,
			wantChanged: true,
			wantKruise:  &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now), Message: "[]"},
			wantReady:   corev1.ConditionTrue,
		},
		{
			name:        "other key remains: stays False, Ready stays False",
			pod:         base(kruiseCond(corev1.ConditionFalse, `[{"userAgent":"ContainerRecreateRequest","key":"crr-1"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]`), corev1.ConditionTrue),
			key:         lifecycleUpdate,
			wantChanged: true,
			wantKruise: &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0),
				Message: `[{"userAgent":"ContainerRecreateRequest","key":"crr-1"}]`},
			wantReady: corev1.ConditionFalse,
		},
		{
			name:        "last key but another gate False: Ready stays False",
			pod:         base(kruiseCond(corev1.ConditionFalse, `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`), corev1.ConditionFalse),
			key:         lifecycleUpdate,
			wantChanged: true,
			wantKruise:  &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now), Message: "[]"},
			wantReady:   corev1.ConditionFalse,
		},
		{
			name:       "key not held: nothing to do",
			pod:        base(kruiseCond(corev1.ConditionFalse, `[{"userAgent":"ContainerRecreateRequest","key":"crr-1"}]`), corev1.ConditionTrue),
			key:        lifecycleUpdate,
			wantKruise: &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0), Message: `[{"userAgent":"ContainerRecreateRequest","key":"crr-1"}]`},
			wantReady:  corev1.ConditionFalse,
		},
		{
			name: "no condition: nothing to do",
			pod: newPod(gates, cond(corev1.ContainersReady, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionFalse),
				cond(inPlaceUpdateReady, corev1.ConditionTrue)),
			key:       lifecycleUpdate,
			wantReady: corev1.ConditionFalse,
		},
		{
			name: "someone else's False without keys is left alone",
			pod:  base(kruiseCond(corev1.ConditionFalse, ""), corev1.ConditionTrue),
			key:  lifecycleUpdate,
			wantKruise: &corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse,
				LastTransitionTime: metav1.NewTime(t0)},
			wantReady: corev1.ConditionFalse,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			changed, conds := RemoveNotReadyKey(tc.pod, tc.key, now)
			assert.Equal(t, before, tc.pod, "input pod modified")
			assert.Equal(t, tc.wantChanged, changed)
			if tc.wantKruise == nil {
				assert.Nil(t, find(conds, ConditionType))
			} else {
				assert.Equal(t, tc.wantKruise, find(conds, ConditionType))
			}
			if !tc.wantChanged {
				assert.Equal(t, tc.pod.Status.Conditions, conds)
			}
			assert.Equal(t, tc.wantReady, find(conds, corev1.PodReady).Status)
		})
	}
}

func TestApplyRemovesThenAdds(t *testing.T) {
	pod := withKruise(readyPod(), kruiseCond(corev1.ConditionFalse, `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`), corev1.ConditionFalse)
	changed, conds := Apply(pod, []Key{lifecycleDelete}, []Key{lifecycleUpdate, lifecycleDelete}, now)
	require.True(t, changed)
	assert.Equal(t, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`, find(conds, ConditionType).Message)
	assert.Equal(t, corev1.ConditionFalse, find(conds, ConditionType).Status)
}

func TestRecomputeReady(t *testing.T) {
	gate := func(c corev1.PodConditionType) corev1.PodReadinessGate {
		return corev1.PodReadinessGate{ConditionType: c}
	}
	type want struct {
		changed bool
		status  corev1.ConditionStatus
		reason  string
		message string
		ltt     time.Time
	}
	for _, tc := range []struct {
		name  string
		gates []corev1.PodReadinessGate
		conds []corev1.PodCondition
		want  want
	}{
		{
			name:  "no gates, containers ready: True",
			conds: []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionFalse)},
			want:  want{changed: true, status: corev1.ConditionTrue, ltt: now},
		},
		{
			name:  "all gates True: True",
			gates: []corev1.PodReadinessGate{gate(ConditionType), gate(inPlaceUpdateReady)},
			conds: []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionFalse),
				cond(ConditionType, corev1.ConditionTrue), cond(inPlaceUpdateReady, corev1.ConditionTrue)},
			want: want{changed: true, status: corev1.ConditionTrue, ltt: now},
		},
		{
			name:  "already consistent: unchanged",
			gates: []corev1.PodReadinessGate{gate(ConditionType)},
			conds: []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionTrue),
				cond(ConditionType, corev1.ConditionTrue)},
			want: want{status: corev1.ConditionTrue, ltt: t0},
		},
		{
			name:  "gate condition missing: False",
			gates: []corev1.PodReadinessGate{gate(ConditionType)},
			conds: []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionTrue)},
			want: want{changed: true, status: corev1.ConditionFalse, reason: ReasonReadinessGatesNotReady, ltt: now,
				message: `corresponding condition of pod readiness gate "KruisePodReady" does not exist.`},
		},
		{
			name:  "gate False: False, every unready gate named in order",
			gates: []corev1.PodReadinessGate{gate(inPlaceUpdateReady), gate(ConditionType)},
			conds: []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionTrue),
				cond(ConditionType, corev1.ConditionFalse)},
			want: want{changed: true, status: corev1.ConditionFalse, reason: ReasonReadinessGatesNotReady, ltt: now,
				message: `corresponding condition of pod readiness gate "InPlaceUpdateReady" does not exist., the status of pod readiness gate "KruisePodReady" is not "True", but False`},
		},
		{
			name:  "containers not ready wins over gates, reason and message copied",
			gates: []corev1.PodReadinessGate{gate(ConditionType)},
			conds: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [app]"},
				cond(corev1.PodReady, corev1.ConditionTrue), cond(ConditionType, corev1.ConditionFalse)},
			want: want{changed: true, status: corev1.ConditionFalse, reason: "ContainersNotReady", message: "containers with unready status: [app]", ltt: now},
		},
		{
			name:  "containers not ready without reason",
			conds: []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionFalse), cond(corev1.PodReady, corev1.ConditionTrue)},
			want:  want{changed: true, status: corev1.ConditionFalse, reason: ReasonContainersNotReady, ltt: now},
		},
		{
			name:  "already False, only the message changes: transition time kept",
			gates: []corev1.PodReadinessGate{gate(ConditionType)},
			conds: []corev1.PodCondition{cond(corev1.ContainersReady, corev1.ConditionTrue), cond(corev1.PodReady, corev1.ConditionFalse),
				cond(ConditionType, corev1.ConditionFalse)},
			want: want{changed: true, status: corev1.ConditionFalse, reason: ReasonReadinessGatesNotReady, ltt: t0,
				message: `the status of pod readiness gate "KruisePodReady" is not "True", but False`},
		},
		{
			name:  "no ContainersReady, gate False: lowered",
			gates: []corev1.PodReadinessGate{gate(ConditionType)},
			conds: []corev1.PodCondition{cond(corev1.PodReady, corev1.ConditionTrue), cond(ConditionType, corev1.ConditionFalse)},
			want: want{changed: true, status: corev1.ConditionFalse, reason: ReasonReadinessGatesNotReady, ltt: now,
				message: `the status of pod readiness gate "KruisePodReady" is not "True", but False`},
		},
		{
			name:  "no ContainersReady, gates True: never raised",
			gates: []corev1.PodReadinessGate{gate(ConditionType)},
			conds: []corev1.PodCondition{cond(corev1.PodReady, corev1.ConditionFalse), cond(ConditionType, corev1.ConditionTrue)},
			want:  want{status: corev1.ConditionFalse, ltt: t0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(nil, tc.conds...)
			pod.Spec.ReadinessGates = tc.gates
			before := pod.DeepCopy()
			changed, out := RecomputeReady(pod, pod.Status.Conditions, now)
			assert.Equal(t, before, pod, "input modified")
			assert.Equal(t, tc.want.changed, changed)
			r := find(out, corev1.PodReady)
			require.NotNil(t, r)
			assert.Equal(t, tc.want.status, r.Status)
			assert.Equal(t, tc.want.reason, r.Reason)
			assert.Equal(t, tc.want.message, r.Message)
			assert.Equal(t, metav1.NewTime(tc.want.ltt), r.LastTransitionTime)
			assert.Len(t, out, len(tc.conds), "no condition added or dropped")
		})
	}
}

func TestRecomputeReadyNeverAddsReady(t *testing.T) {
	pod := newPod([]corev1.PodConditionType{ConditionType}, cond(corev1.ContainersReady, corev1.ConditionTrue), cond(ConditionType, corev1.ConditionFalse))
	changed, out := RecomputeReady(pod, pod.Status.Conditions, now)
	assert.False(t, changed)
	assert.Equal(t, pod.Status.Conditions, out)
	assert.Nil(t, find(out, corev1.PodReady))
}

func TestHelpers(t *testing.T) {
	pod := readyPod()
	assert.True(t, HasReadinessGate(pod))
	assert.False(t, HasReadinessGate(newPod([]corev1.PodConditionType{inPlaceUpdateReady})))
	assert.Nil(t, NotReadyKeys(pod))
	assert.False(t, HasNotReadyKey(pod, lifecycleDelete))

	pod.Status.Conditions[2].Message = `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`
	assert.Equal(t, []Key{lifecycleDelete}, NotReadyKeys(pod))
	assert.True(t, HasNotReadyKey(pod, lifecycleDelete))
	assert.False(t, HasNotReadyKey(pod, lifecycleUpdate))
	assert.Equal(t, "Lifecycle/preDeleteHook", lifecycleDelete.String())
}
