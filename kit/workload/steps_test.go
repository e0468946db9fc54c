package workload

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/expectations"
)

func TestTakeSteps(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name                   string
		refreshed, scaled      bool
		refreshErr, scaleErr   error
		wantUpdate             bool
		wantScaleErr, wantUErr error
	}{
		{name: "nothing to refresh or scale: update", wantUpdate: true},
		{name: "refreshed: the update waits for the cache", refreshed: true},
		{name: "scaled: the update waits", scaled: true},
		{name: "scale failed: no update", scaleErr: boom, wantScaleErr: boom},
		{name: "refresh failed: reported as the update's", refreshErr: boom, wantUErr: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps []string
			scaled, scaleErr, updateErr := TakeSteps(t.Context(), "st",
				func(_ context.Context, st string) (bool, error) {
					steps = append(steps, "refresh")
					return tc.refreshed, tc.refreshErr
				},
				func(_ context.Context, st string) (bool, error) {
					steps = append(steps, "scale")
					return tc.scaled, tc.scaleErr
				},
				func(_ context.Context, st string) error { steps = append(steps, "update"); return nil })
			want := []string{"refresh", "scale"}
			if tc.wantUpdate {
				want = append(want, "update")
			}
			assert.Equal(t, want, steps)
			assert.Equal(t, tc.scaled, scaled)
			assert.Equal(t, tc.wantScaleErr, scaleErr)
			assert.Equal(t, tc.wantUErr, updateErr)
		})
	}
}

func TestStatusSelector(t *testing.T) {
	assert.Equal(t, "app=web", StatusSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}))
	assert.Equal(t, "", StatusSelector(nil), "none")
	assert.Equal(t, "", StatusSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "bogus"}}}), "unformattable")
}

func TestExpectationCounters(t *testing.T) {
	b, _, clk := newBase(t, Spec{Name: "thing"})
	exp := b.Scale()
	exp.Expect(key, expectations.Create, "p1")
	counters := b.ExpectationCounters(exp, "help")
	assert.Equal(t, "thing_scale_expectation_leakage_total", counters[0].Name)
	assert.Equal(t, "thing_resource_version_expectation_timeouts_total", counters[1].Name)
	assert.Zero(t, counters[0].Value())
	clk.Step(exp.Timeout() + 1)
	exp.Satisfied(key)
	assert.Equal(t, float64(1), counters[0].Value(), "a timed-out expectation is counted")
}
