package imagepuller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func specOf(tags map[string][]appsv1beta1.ImageTagSpec) *appsv1beta1.NodeImageSpec {
	s := &appsv1beta1.NodeImageSpec{Images: map[string]appsv1beta1.ImageSpec{}}
	for image, ts := range tags {
		s.Images[image] = appsv1beta1.ImageSpec{Tags: ts}
	}
	return s
}

func tagStatus(tag string, version int64, phase appsv1beta1.ImagePullPhase, done bool) appsv1beta1.ImageTagStatus {
	st := appsv1beta1.ImageTagStatus{Tag: tag, Version: version, Phase: phase}
	if done {
		st.CompletionTime = &metav1.Time{Time: t0}
	}
	return st
}

func TestDecide(t *testing.T) {
	spec := specOf(map[string][]appsv1beta1.ImageTagSpec{"r/a": {{Tag: "v1", Version: 2}, {Tag: "v2", Version: 0}}})
	status := func(tags ...appsv1beta1.ImageTagStatus) *appsv1beta1.NodeImageStatus {
		return &appsv1beta1.NodeImageStatus{ImageStatuses: map[string]appsv1beta1.ImageStatus{"r/a": {Tags: tags}}}
	}
	v1, v2 := tagKey{"r/a", "v1"}, tagKey{"r/a", "v2"}
	for _, tc := range []struct {
		name   string
		status *appsv1beta1.NodeImageStatus
		tasks  map[tagKey]int64
		want   plan
	}{
		{name: "new tags are pulled", status: &appsv1beta1.NodeImageStatus{}, want: plan{Start: []tagKey{v1, v2}}},
		{name: "tasks at the spec's version are left alone", status: &appsv1beta1.NodeImageStatus{},
			tasks: map[tagKey]int64{v1: 2, v2: 0}, want: plan{}},
		{name: "a new version stops the old pull and starts again", status: &appsv1beta1.NodeImageStatus{},
			tasks: map[tagKey]int64{v1: 1, v2: 0}, want: plan{Start: []tagKey{v1}, Stop: []tagKey{v1}}},
		{name: "a tag gone from the spec is stopped", status: &appsv1beta1.NodeImageStatus{},
			tasks: map[tagKey]int64{v1: 2, v2: 0, {"r/b", "x"}: 0}, want: plan{Stop: []tagKey{{"r/b", "x"}}}},
		{name: "restart: finished at the spec's version is adopted, not pulled",
			status: status(tagStatus("v1", 2, appsv1beta1.ImagePhaseSucceeded, true), tagStatus("v2", 0, appsv1beta1.ImagePhaseFailed, true)),
			want: plan{Adopt: map[tagKey]appsv1beta1.ImageTagStatus{
				v1: tagStatus("v1", 2, appsv1beta1.ImagePhaseSucceeded, true), v2: tagStatus("v2", 0, appsv1beta1.ImagePhaseFailed, true)}}},
		{name: "restart: a pull in flight (Pulling, no completionTime) is pulled again",
			status: status(tagStatus("v1", 2, appsv1beta1.ImagePhasePulling, false), tagStatus("v2", 0, appsv1beta1.ImagePhaseWaiting, false)),
			want:   plan{Start: []tagKey{v1, v2}}},
		{name: "restart: finished at an older version is pulled again",
			status: status(tagStatus("v1", 1, appsv1beta1.ImagePhaseSucceeded, true)),
			want:   plan{Start: []tagKey{v1, v2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, decide(spec, tc.status, tc.tasks))
		})
	}
}

func TestBuildStatus(t *testing.T) {
	spec := specOf(map[string][]appsv1beta1.ImageTagSpec{
		"r/a": {{Tag: "v2"}, {Tag: "v1"}, {Tag: "v3"}},
		"r/b": {{Tag: "x"}},
		"r/c": {{Tag: "y"}},
	})
	first := &appsv1beta1.SyncStatus{Status: appsv1beta1.SyncStatusSucceeded}
	got := buildStatus(spec, map[tagKey]appsv1beta1.ImageTagStatus{
		{"r/a", "v1"}:   tagStatus("v1", 0, appsv1beta1.ImagePhaseSucceeded, true),
		{"r/a", "v2"}:   tagStatus("v2", 0, appsv1beta1.ImagePhasePulling, false),
		{"r/a", "v3"}:   tagStatus("v3", 0, appsv1beta1.ImagePhaseFailed, true),
		{"r/b", "x"}:    tagStatus("x", 0, appsv1beta1.ImagePhaseWaiting, false),
		{"r/gone", "z"}: tagStatus("z", 0, appsv1beta1.ImagePhaseSucceeded, true),
	}, &appsv1beta1.NodeImageStatus{Desired: 9, FirstSyncStatus: first})
	assert.Equal(t, appsv1beta1.NodeImageStatus{
		Desired: 5, Succeeded: 1, Failed: 1, Pulling: 1, Waiting: 1, FirstSyncStatus: first,
		ImageStatuses: map[string]appsv1beta1.ImageStatus{
			"r/a": {Tags: []appsv1beta1.ImageTagStatus{ // sorted by tag, as kruise-daemon writes them
				tagStatus("v1", 0, appsv1beta1.ImagePhaseSucceeded, true),
				tagStatus("v2", 0, appsv1beta1.ImagePhasePulling, false),
				tagStatus("v3", 0, appsv1beta1.ImagePhaseFailed, true)}},
			"r/b": {Tags: []appsv1beta1.ImageTagStatus{tagStatus("x", 0, appsv1beta1.ImagePhaseWaiting, false)}},
		},
	}, got)
	assert.Nil(t, buildStatus(spec, nil, &appsv1beta1.NodeImageStatus{}).ImageStatuses, "no entries: no map")
}

func TestAttempts(t *testing.T) {
	created := metav1.NewTime(t0.Add(-50 * time.Second))
	for _, tc := range []struct {
		name string
		spec appsv1beta1.ImageTagSpec
		want attempts
	}{
		{"defaults (imagePullPolicy IfNotPresent, as the API documents)", appsv1beta1.ImageTagSpec{}, attempts{Timeout: 10 * time.Minute, Retries: 3, SkipPresent: true}},
		{"IfNotPresent skips a present image", appsv1beta1.ImageTagSpec{ImagePullPolicy: appsv1beta1.PullIfNotPresent},
			attempts{Timeout: 10 * time.Minute, Retries: 3, SkipPresent: true}},
		{"Always pulls", appsv1beta1.ImageTagSpec{ImagePullPolicy: appsv1beta1.PullAlways}, attempts{Timeout: 10 * time.Minute, Retries: 3}},
		{"policy", appsv1beta1.ImageTagSpec{PullPolicy: &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To(int32(30)), BackoffLimit: ptr.To(int32(0))}},
			attempts{Timeout: 30 * time.Second, Retries: 0, SkipPresent: true}},
		{"negative backoffLimit is the default", appsv1beta1.ImageTagSpec{PullPolicy: &appsv1beta1.ImageTagPullPolicy{BackoffLimit: ptr.To(int32(-1))}},
			attempts{Timeout: 10 * time.Minute, Retries: 3, SkipPresent: true}},
		{"deadline from createdAt", appsv1beta1.ImageTagSpec{CreatedAt: &created, PullPolicy: &appsv1beta1.ImageTagPullPolicy{ActiveDeadlineSeconds: ptr.To(int64(60))}},
			attempts{Timeout: 10 * time.Minute, Retries: 3, Deadline: t0.Add(10 * time.Second), SkipPresent: true}},
		{"deadline from start without createdAt", appsv1beta1.ImageTagSpec{PullPolicy: &appsv1beta1.ImageTagPullPolicy{ActiveDeadlineSeconds: ptr.To(int64(60))}},
			attempts{Timeout: 10 * time.Minute, Retries: 3, Deadline: t0.Add(time.Minute), SkipPresent: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, attemptsFor(tc.spec, t0)) })
	}

	a := attempts{Timeout: time.Minute, Deadline: t0.Add(10 * time.Second)}
	d, ok := a.attemptTimeout(t0)
	assert.True(t, ok)
	assert.Equal(t, 10*time.Second, d, "an attempt ends at the deadline")
	_, ok = a.attemptTimeout(t0.Add(10 * time.Second))
	assert.False(t, ok, "no attempt starts past the deadline")
	d, ok = attempts{Timeout: time.Minute}.attemptTimeout(t0)
	assert.True(t, ok)
	assert.Equal(t, time.Minute, d)
}

func TestBackoff(t *testing.T) {
	var got []time.Duration
	for i := range 7 {
		got = append(got, backoff(i))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		30 * time.Second, 30 * time.Second}, got)
}

func TestReference(t *testing.T) {
	assert.Equal(t, "r/a:v1", tagKey{"r/a", "v1"}.reference())
	assert.Equal(t, "r/a@sha256:abc", tagKey{"r/a", "sha256:abc"}.reference())
}
