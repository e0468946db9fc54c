package advancedcronjob

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// ScheduleValid follows the parse result; it keeps its transition time while its status holds, and the
// cached conditions are never modified.
func TestScheduleCondition(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	acj := &appsv1alpha1.AdvancedCronJob{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	_, zoneErr := parseSchedule("* * * * *", ptr.To("Mars/Olympus"), time.UTC)
	_, cronErr := parseSchedule("61 * * * *", nil, time.UTC)
	require.Error(t, zoneErr)
	require.Error(t, cronErr)

	cases := []struct {
		name       string
		err        error
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"usable", nil, metav1.ConditionTrue, "Valid"},
		{"unknown zone", zoneErr, metav1.ConditionFalse, reasonUnknownTimeZone},
		{"bad cron", cronErr, metav1.ConditionFalse, reasonInvalidSchedule},
		{"plain error", errors.New("boom"), metav1.ConditionFalse, reasonInvalidSchedule},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conds := scheduleCondition(acj, tc.err, t0)
			c := meta.FindStatusCondition(conds, appsv1alpha1.AdvancedCronJobScheduleValid)
			require.NotNil(t, c)
			assert.Equal(t, tc.wantStatus, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Equal(t, int64(3), c.ObservedGeneration)
			if tc.err != nil {
				assert.Contains(t, c.Message, tc.err.Error())
			}
		})
	}

	acj.Status.Conditions = scheduleCondition(acj, cronErr, t0)
	cached := append([]metav1.Condition(nil), acj.Status.Conditions...)
	later := scheduleCondition(acj, cronErr, t0.Add(time.Hour))
	assert.Equal(t, t0, later[0].LastTransitionTime.Time, "unchanged status keeps its transition time")
	fixed := scheduleCondition(acj, nil, t0.Add(time.Hour))
	assert.Equal(t, t0.Add(time.Hour), fixed[0].LastTransitionTime.Time, "a flip records when it happened")
	assert.Equal(t, cached, acj.Status.Conditions, "the object's own conditions are not modified")
}
