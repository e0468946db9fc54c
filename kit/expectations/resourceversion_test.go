package expectations

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func podRV(uid types.UID, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: string(uid), UID: uid, ResourceVersion: rv}}
}

func TestResourceVersion(t *testing.T) {
	cases := []struct {
		name         string
		do           func(r *ResourceVersion, clk *clocktesting.FakeClock)
		cached       string // resourceVersion of uid "a" in the cache
		wantOK       bool
		wantWait     time.Duration
		wantTimedOut uint64
	}{
		{name: "nothing expected", do: func(*ResourceVersion, *clocktesting.FakeClock) {}, cached: "1", wantOK: true},
		{
			name:   "cache older",
			do:     func(r *ResourceVersion, _ *clocktesting.FakeClock) { r.Expect(podRV("a", "10")) },
			cached: "9", wantWait: DefaultTimeout,
		},
		{
			name:   "cache equal",
			do:     func(r *ResourceVersion, _ *clocktesting.FakeClock) { r.Expect(podRV("a", "10")) },
			cached: "10", wantOK: true,
		},
		{
			name:   "cache newer",
			do:     func(r *ResourceVersion, _ *clocktesting.FakeClock) { r.Expect(podRV("a", "10")) },
			cached: "11", wantOK: true,
		},
		{
			name:   "numeric, not lexical, comparison",
			do:     func(r *ResourceVersion, _ *clocktesting.FakeClock) { r.Expect(podRV("a", "9")) },
			cached: "10", wantOK: true,
		},
		{
			name:   "numeric, not lexical, comparison (older)",
			do:     func(r *ResourceVersion, _ *clocktesting.FakeClock) { r.Expect(podRV("a", "100")) },
			cached: "99", wantWait: DefaultTimeout,
		},
		{
			name:   "non-numeric equal",
			do:     func(r *ResourceVersion, _ *clocktesting.FakeClock) { r.Expect(podRV("a", "abc")) },
			cached: "abc", wantOK: true,
		},
		{
			name:   "non-numeric different",
			do:     func(r *ResourceVersion, _ *clocktesting.FakeClock) { r.Expect(podRV("a", "abc")) },
			cached: "abd", wantWait: DefaultTimeout,
		},
		{
			name:   "one side non-numeric compares by equality",
			do:     func(r *ResourceVersion, _ *clocktesting.FakeClock) { r.Expect(podRV("a", "10")) },
			cached: "x11", wantWait: DefaultTimeout,
		},
		{
			name:   "negative numbers are not numeric",
			do:     func(r *ResourceVersion, _ *clocktesting.FakeClock) { r.Expect(podRV("a", "-2")) },
			cached: "1", wantWait: DefaultTimeout,
		},
		{
			name: "observed from the cache",
			do: func(r *ResourceVersion, _ *clocktesting.FakeClock) {
				r.Expect(podRV("a", "10"))
				r.Observe(podRV("a", "10"))
			},
			cached: "9", wantOK: true, // the entry is gone, whatever copy is asked about
		},
		{
			name: "observing an older copy keeps the expectation",
			do: func(r *ResourceVersion, _ *clocktesting.FakeClock) {
				r.Expect(podRV("a", "10"))
				r.Observe(podRV("a", "9"))
			},
			cached: "9", wantWait: DefaultTimeout,
		},
		{
			name: "observing another object keeps the expectation",
			do: func(r *ResourceVersion, _ *clocktesting.FakeClock) {
				r.Expect(podRV("a", "10"))
				r.Observe(podRV("b", "10"))
			},
			cached: "9", wantWait: DefaultTimeout,
		},
		{
			name: "another object's expectation does not block",
			do: func(r *ResourceVersion, _ *clocktesting.FakeClock) {
				r.Expect(podRV("b", "10"))
			},
			cached: "9", wantOK: true,
		},
		{
			name: "a later write is expected",
			do: func(r *ResourceVersion, _ *clocktesting.FakeClock) {
				r.Expect(podRV("a", "10"))
				r.Expect(podRV("a", "12"))
			},
			cached: "11", wantWait: DefaultTimeout,
		},
		{
			name: "writes answered out of order keep the later version",
			do: func(r *ResourceVersion, _ *clocktesting.FakeClock) {
				r.Expect(podRV("a", "12"))
				r.Expect(podRV("a", "10"))
			},
			cached: "11", wantWait: DefaultTimeout,
		},
		{
			name: "a later non-numeric write replaces the expectation",
			do: func(r *ResourceVersion, _ *clocktesting.FakeClock) {
				r.Expect(podRV("a", "abc"))
				r.Expect(podRV("a", "xyz"))
			},
			cached: "abc", wantWait: DefaultTimeout,
		},
		{
			name: "objects without resourceVersion or UID are ignored",
			do: func(r *ResourceVersion, _ *clocktesting.FakeClock) {
				r.Expect(podRV("a", ""))
				r.Expect(podRV("", "10"))
			},
			cached: "9", wantOK: true,
		},
		{
			name: "wait is the time left until the timeout",
			do: func(r *ResourceVersion, clk *clocktesting.FakeClock) {
				r.Expect(podRV("a", "10"))
				clk.Step(2 * time.Minute)
			},
			cached: "9", wantWait: DefaultTimeout - 2*time.Minute,
		},
		{
			name: "expecting again restarts the timeout",
			do: func(r *ResourceVersion, clk *clocktesting.FakeClock) {
				r.Expect(podRV("a", "10"))
				clk.Step(2 * time.Minute)
				r.Expect(podRV("a", "10"))
				clk.Step(time.Minute)
			},
			cached: "9", wantWait: DefaultTimeout - time.Minute,
		},
		{
			name: "timeout",
			do: func(r *ResourceVersion, clk *clocktesting.FakeClock) {
				r.Expect(podRV("a", "10"))
				clk.Step(DefaultTimeout)
			},
			cached: "9", wantOK: true, wantTimedOut: 1,
		},
		{
			name: "delete",
			do: func(r *ResourceVersion, _ *clocktesting.FakeClock) {
				r.Expect(podRV("a", "10"))
				r.Delete("a")
			},
			cached: "9", wantOK: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			r := NewResourceVersion(WithClock(clk))
			tc.do(r, clk)

			ok, wait := r.Satisfied(podRV("a", tc.cached))
			assert.Equal(t, tc.wantOK, ok, "ok")
			assert.Equal(t, tc.wantWait, wait, "wait")
			assert.Equal(t, tc.wantTimedOut, r.TimedOut(), "TimedOut")

			// Satisfied drops what it reported satisfied: even a stale copy passes now.
			ok2, wait2 := r.Satisfied(podRV("a", "1"))
			if ok {
				assert.True(t, ok2, "stale copy after satisfied")
				assert.Zero(t, wait2)
			} else {
				assert.False(t, ok2, "stale copy while pending")
				assert.Equal(t, wait, wait2)
			}
			assert.Equal(t, tc.wantTimedOut, r.TimedOut(), "TimedOut again")
		})
	}
}

func TestRVAtLeast(t *testing.T) {
	cases := []struct {
		have, want string
		ok         bool
	}{
		{"5", "5", true},
		{"6", "5", true},
		{"5", "6", false},
		{"10", "9", true},
		{"9", "10", false},
		{"18446744073709551615", "18446744073709551614", true}, // max uint64
		{"18446744073709551616", "1", false},                   // overflows: not numeric
		{"a", "a", true},
		{"b", "a", false},
		{"", "1", false},
		{"007", "7", true},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.ok, rvAtLeast(tc.have, tc.want), "%q ≥ %q", tc.have, tc.want)
	}
}

func TestResourceVersionWait(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	r := NewResourceVersion(WithClock(clk))
	assert.Zero(t, r.Wait(podRV("a", "1"), podRV("b", "1")), "nothing expected")
	r.Expect(podRV("a", "5"))
	clk.Step(time.Minute)
	r.Expect(podRV("b", "5"))
	assert.Equal(t, DefaultTimeout-time.Minute, r.Wait(podRV("a", "4"), podRV("b", "4")), "the sooner timeout")
	assert.Equal(t, DefaultTimeout, r.Wait(podRV("a", "5"), podRV("b", "4")), "a caught up")
	assert.Zero(t, r.Wait(podRV("b", "6")))

	// WaitAll: the objects and the pods together.
	r = NewResourceVersion(WithClock(clk))
	r.Expect(podRV("a", "5"))
	clk.Step(time.Minute)
	r.Expect(podRV("b", "5"))
	pods := []*corev1.Pod{podRV("b", "4")}
	assert.Equal(t, DefaultTimeout-time.Minute, WaitAll(r, slices.Values(pods), podRV("a", "4")), "the sooner timeout, a among the objects")
	assert.Equal(t, DefaultTimeout, WaitAll(r, slices.Values(pods), podRV("a", "5")), "a caught up, b in the pods lags")
	assert.Zero(t, WaitAll(r, slices.Values([]*corev1.Pod{podRV("b", "5")}), podRV("a", "5")))
}
