package nodeimage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

var t0 = time.Unix(10000, 0)

func node(ready bool, since time.Time, labels map[string]string) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(since)}}}}
}

func TestPlanLifecycle(t *testing.T) {
	ni := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	fake := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{FakeLabelKey: ""}}}
	deleting := node(true, t0, nil)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	for _, c := range []struct {
		name string
		node *corev1.Node
		ni   *appsv1beta1.NodeImage
		want lifecycle
		wait time.Duration
	}{
		{name: "ready long enough: create", node: node(true, t0.Add(-time.Minute), nil), want: create},
		{name: "ready 10s ago: wait", node: node(true, t0.Add(-10*time.Second), nil), want: keep, wait: 20 * time.Second},
		{name: "not ready: nothing", node: node(false, t0.Add(-time.Hour), nil), want: keep},
		{name: "virtual kubelet: none", node: node(true, t0.Add(-time.Hour), map[string]string{"type": "virtual-kubelet"}), want: keep},
		{name: "virtual kubelet: removed", node: node(true, t0.Add(-time.Hour), map[string]string{"type": "virtual-kubelet"}), ni: ni, want: remove},
		{name: "exists: keep", node: node(true, t0, nil), ni: ni, want: keep},
		{name: "node gone: remove", ni: ni, want: remove},
		{name: "node deleting: remove", node: deleting, ni: ni, want: remove},
		{name: "node gone, fake: keep", ni: fake, want: keep},
		{name: "node gone, none: nothing", want: keep},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, wait := planLifecycle(c.node, c.ni, 30*time.Second, t0)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.wait, wait)
		})
	}
}

func tag(name string, v int64, created *metav1.Time, ttl *int32, owners ...corev1.ObjectReference) appsv1beta1.ImageTagSpec {
	t := appsv1beta1.ImageTagSpec{Tag: name, Version: v, CreatedAt: created, OwnerReferences: owners}
	if ttl != nil {
		t.PullPolicy = &appsv1beta1.ImageTagPullPolicy{TTLSecondsAfterFinished: ttl}
	}
	return t
}

func jobRef(name, uid string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob", Namespace: "ns", Name: name, UID: types.UID(uid)}
}

func TestPruneSpec(t *testing.T) {
	created := &metav1.Time{Time: t0.Add(-time.Hour)}
	alive := func(_, name string, uid types.UID) bool { return name == "live" && uid == "u-live" }
	other := corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "cs"}
	finished := func(tagName string, v int64, ago time.Duration) appsv1beta1.ImageTagStatus {
		return appsv1beta1.ImageTagStatus{Tag: tagName, Version: v, Phase: appsv1beta1.ImagePhaseSucceeded, CompletionTime: &metav1.Time{Time: t0.Add(-ago)}}
	}
	ni := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "1"}}}
	ni.Spec.Images = map[string]appsv1beta1.ImageSpec{
		"nginx": {PullSecrets: []appsv1beta1.ReferenceObject{{Namespace: "flotilla-node", Name: "s", Mode: "batch"}}, Tags: []appsv1beta1.ImageTagSpec{
			tag("1", 0, created, nil, jobRef("live", "u-live"), jobRef("gone", "u-gone")), // one owner left
			tag("2", 0, created, nil, jobRef("live", "u-old")),                            // recreated job: dropped
			tag("3", 0, nil, nil, jobRef("live", "u-live")),                               // no createdAt: dropped
			tag("4", 0, created, nil, other),                                              // other kind: kept
			tag("5", 1, created, ptr.To[int32](60), jobRef("live", "u-live")),             // TTL passed: dropped
			tag("6", 1, created, ptr.To[int32](60), jobRef("live", "u-live")),             // TTL running: wait
			tag("7", 2, created, ptr.To[int32](60), jobRef("live", "u-live")),             // finished an older version: no TTL
		}},
		"redis": {PullSecrets: []appsv1beta1.ReferenceObject{{Namespace: "flotilla-node", Name: "r"}}, Tags: []appsv1beta1.ImageTagSpec{
			tag("7", 0, created, nil, jobRef("gone", "u-gone")),
		}},
	}
	ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{"nginx": {Tags: []appsv1beta1.ImageTagStatus{
		finished("5", 1, 61*time.Second), finished("6", 1, 20*time.Second), finished("7", 1, time.Hour)}}}
	before := ni.DeepCopy()

	out, changed, wait, why := pruneSpec(ni, map[string]string{"a": "2"}, alive, t0)
	assert.True(t, changed)
	assert.Equal(t, before, ni, "the cached object is never modified")
	assert.Equal(t, map[string]string{"a": "2"}, out.Labels)
	assert.Equal(t, 40*time.Second, wait)
	assert.NotEmpty(t, why)
	assert.NotContains(t, out.Spec.Images, "redis", "an image without tags goes with its secrets")
	var tags []string
	for _, tg := range out.Spec.Images["nginx"].Tags {
		tags = append(tags, tg.Tag)
	}
	assert.Equal(t, []string{"1", "4", "6", "7"}, tags)
	assert.Equal(t, []corev1.ObjectReference{jobRef("live", "u-live")}, out.Spec.Images["nginx"].Tags[0].OwnerReferences)
	assert.Equal(t, before.Spec.Images["nginx"].PullSecrets, out.Spec.Images["nginx"].PullSecrets)

	_, changed, _, _ = pruneSpec(out, out.Labels, alive, t0)
	assert.False(t, changed, "a clean NodeImage is not written again")
	labelsOnly, changed, _, why := pruneSpec(out, map[string]string{"a": "3"}, alive, t0)
	assert.True(t, changed)
	assert.Equal(t, []string{"node labels changed"}, why)
	assert.Equal(t, out.Spec, labelsOnly.Spec)
}

func TestCalculateStatus(t *testing.T) {
	now := metav1.NewTime(t0)
	recent := &metav1.Time{Time: t0.Add(-time.Minute)}
	old := &metav1.Time{Time: t0.Add(-ResponseTimeout - time.Second)}
	deadlined := tag("d", 0, &metav1.Time{Time: t0.Add(-ResponseTimeout - 31*time.Second)}, nil)
	deadlined.PullPolicy = &appsv1beta1.ImageTagPullPolicy{ActiveDeadlineSeconds: ptr.To[int64](30)}
	ni := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	ni.Spec.Images = map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{
		tag("a", 0, recent, nil), // not answered, within the timeout
		tag("b", 1, old, nil),    // answered an older version only: fails
		tag("c", 0, old, nil),    // answered: succeeded
		deadlined,                // pulling past its deadline: fails
	}}}
	ni.Status = appsv1beta1.NodeImageStatus{Desired: 4, Waiting: 2, ImageStatuses: map[string]appsv1beta1.ImageStatus{"nginx": {Tags: []appsv1beta1.ImageTagStatus{
		{Tag: "b", Version: 0, Phase: appsv1beta1.ImagePhaseSucceeded},
		{Tag: "c", Version: 0, Phase: appsv1beta1.ImagePhaseSucceeded},
		{Tag: "d", Version: 0, Phase: appsv1beta1.ImagePhasePulling, Progress: 40},
		{Tag: "gone", Version: 0, Phase: appsv1beta1.ImagePhaseSucceeded},
	}}}}
	st, changed, wait, failed := calculateStatus(ni, now)
	assert.True(t, changed)
	assert.Equal(t, ResponseTimeout-time.Minute, wait)
	assert.Equal(t, []failure{{"nginx:b", msgNoResponse}, {"nginx:d", msgDeadlineExceeded}}, failed)
	assert.Equal(t, []appsv1beta1.ImageTagStatus{
		{Tag: "b", Version: 1, Phase: appsv1beta1.ImagePhaseFailed, CompletionTime: &now, Message: msgNoResponse},
		{Tag: "c", Version: 0, Phase: appsv1beta1.ImagePhaseSucceeded},
		{Tag: "d", Version: 0, Phase: appsv1beta1.ImagePhaseFailed, CompletionTime: &now, Message: msgDeadlineExceeded, Progress: 40},
	}, st.ImageStatuses["nginx"].Tags, "the status of a tag no longer in spec is dropped")
	assert.Equal(t, int32(4), st.Desired)
	assert.Equal(t, int32(1), st.Succeeded)
	assert.Equal(t, int32(2), st.Failed)
	assert.Equal(t, int32(0), st.Pulling)
	assert.Equal(t, int32(2), st.Waiting, "the agent's count is left alone")

	ni.Status = st
	_, changed, _, failed = calculateStatus(ni, metav1.NewTime(t0.Add(time.Second)))
	assert.False(t, changed, "nothing new: no write")
	assert.Empty(t, failed)
}
