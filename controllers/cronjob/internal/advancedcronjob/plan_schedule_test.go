package advancedcronjob

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}

func TestParseScheduleNext(t *testing.T) {
	cases := []struct {
		name, schedule string
		timeZone       *string
		from, want     string // RFC3339
	}{
		{name: "every minute", schedule: "* * * * *", from: "2026-03-01T10:00:30Z", want: "2026-03-01T10:01:00Z"},
		{name: "every minute from a boundary is the next one", schedule: "* * * * *", from: "2026-03-01T10:00:00Z", want: "2026-03-01T10:01:00Z"},
		{name: "@hourly", schedule: "@hourly", from: "2026-03-01T10:20:00Z", want: "2026-03-01T11:00:00Z"},
		{name: "@daily", schedule: "@daily", from: "2026-03-01T10:20:00Z", want: "2026-03-02T00:00:00Z"},
		{name: "@weekly (Sunday)", schedule: "@weekly", from: "2026-03-04T10:20:00Z", want: "2026-03-08T00:00:00Z"},
		{name: "@monthly", schedule: "@monthly", from: "2026-03-04T10:20:00Z", want: "2026-04-01T00:00:00Z"},
		{name: "@yearly", schedule: "@yearly", from: "2026-03-04T10:20:00Z", want: "2027-01-01T00:00:00Z"},
		{name: "@every", schedule: "@every 90s", from: "2026-03-01T10:00:00Z", want: "2026-03-01T10:01:30Z"},
		{name: "step and range", schedule: "*/15 9-17 * * 1-5", from: "2026-03-06T17:50:00Z", want: "2026-03-09T09:00:00Z"},
		{name: "timeZone Etc/UTC", schedule: "0 12 * * *", timeZone: ptr.To("Etc/UTC"), from: "2026-03-01T10:00:00Z", want: "2026-03-01T12:00:00Z"},
		{name: "timeZone Asia/Tokyo (UTC+9)", schedule: "30 14 * * *", timeZone: ptr.To("Asia/Tokyo"), from: "2026-03-01T00:00:00Z", want: "2026-03-01T05:30:00Z"},
		{name: "timeZone Asia/Shanghai (UTC+8)", schedule: "0 2 * * *", timeZone: ptr.To("Asia/Shanghai"), from: "2026-03-01T00:00:00Z", want: "2026-03-01T18:00:00Z"},
		{name: "timeZone New York before DST", schedule: "0 9 * * *", timeZone: ptr.To("America/New_York"), from: "2026-03-07T00:00:00Z", want: "2026-03-07T14:00:00Z"},
		{name: "timeZone New York after DST", schedule: "0 9 * * *", timeZone: ptr.To("America/New_York"), from: "2026-03-09T00:00:00Z", want: "2026-03-09T13:00:00Z"},
		{name: "CRON_TZ prefix", schedule: "CRON_TZ=Asia/Tokyo 30 14 * * *", from: "2026-03-01T00:00:00Z", want: "2026-03-01T05:30:00Z"},
		{name: "TZ prefix", schedule: "TZ=Asia/Tokyo 30 14 * * *", from: "2026-03-01T00:00:00Z", want: "2026-03-01T05:30:00Z"},
		{name: "no zone uses the default (UTC here)", schedule: "0 3 * * *", from: "2026-03-01T00:00:00+09:00", want: "2026-03-01T03:00:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseSchedule(tc.schedule, tc.timeZone, time.UTC)
			require.NoError(t, err)
			got := s.Next(mustTime(t, tc.from))
			assert.True(t, got.Equal(mustTime(t, tc.want)), "got %s, want %s", got.UTC().Format(time.RFC3339), tc.want)
		})
	}
}

// Specs the API server accepts (its CEL rules cannot check cron syntax or IANA names) but the controller cannot
// run: each must be a *specError with the reason of the Warning event.
func TestParseScheduleBadInput(t *testing.T) {
	cases := []struct {
		name, schedule string
		timeZone       *string
		reason         string
	}{
		{name: "garbage", schedule: "every minute please", reason: reasonInvalidSchedule},
		{name: "too few fields", schedule: "* * * *", reason: reasonInvalidSchedule},
		{name: "six fields (seconds are not standard)", schedule: "0 * * * * *", reason: reasonInvalidSchedule},
		{name: "minute out of range", schedule: "61 * * * *", reason: reasonInvalidSchedule},
		{name: "unknown descriptor", schedule: "@fortnightly", reason: reasonInvalidSchedule},
		{name: "bad @every", schedule: "@every soon", reason: reasonInvalidSchedule},
		{name: "unknown zone in prefix", schedule: "CRON_TZ=Mars/Olympus * * * * *", reason: reasonInvalidSchedule},
		{name: "prefix with timeZone", schedule: "TZ=UTC * * * * *", timeZone: ptr.To("UTC"), reason: reasonInvalidSchedule},
		{name: "unknown timeZone", schedule: "* * * * *", timeZone: ptr.To("Mars/Olympus"), reason: reasonUnknownTimeZone},
		{name: "timeZone Local", schedule: "* * * * *", timeZone: ptr.To("Local"), reason: reasonUnknownTimeZone},
		{name: "empty timeZone", schedule: "* * * * *", timeZone: ptr.To(""), reason: reasonUnknownTimeZone},
		{name: "lower-case zone", schedule: "* * * * *", timeZone: ptr.To("asia/tokyo"), reason: reasonUnknownTimeZone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSchedule(tc.schedule, tc.timeZone, time.UTC)
			var se *specError
			require.True(t, errors.As(err, &se), "want a *specError, got %v", err)
			assert.Equal(t, tc.reason, se.Reason, "%v", err)
		})
	}
}

func TestPlanRuns(t *testing.T) {
	everyMinute := "* * * * *"
	cases := []struct {
		name, schedule string
		earliest, now  string
		deadline       *int64
		wantScheduled  string // "" = none
		wantMissed     int
		wantTooMany    bool
		wantSkipped    bool
		wantNext       string
	}{
		{name: "nothing due yet", schedule: everyMinute, earliest: "2026-03-01T10:00:10Z", now: "2026-03-01T10:00:50Z",
			wantNext: "2026-03-01T10:01:00Z"},
		{name: "one due exactly now", schedule: everyMinute, earliest: "2026-03-01T10:00:10Z", now: "2026-03-01T10:01:00Z",
			wantScheduled: "2026-03-01T10:01:00Z", wantMissed: 1, wantNext: "2026-03-01T10:02:00Z"},
		{name: "the last run is not due again", schedule: everyMinute, earliest: "2026-03-01T10:01:00Z", now: "2026-03-01T10:01:30Z",
			wantNext: "2026-03-01T10:02:00Z"},
		{name: "three missed: the most recent", schedule: everyMinute, earliest: "2026-03-01T10:00:00Z", now: "2026-03-01T10:03:20Z",
			wantScheduled: "2026-03-01T10:03:00Z", wantMissed: 3, wantNext: "2026-03-01T10:04:00Z"},
		{name: "100 missed is not too many", schedule: everyMinute, earliest: "2026-03-01T10:00:00Z", now: "2026-03-01T11:40:00Z",
			wantScheduled: "2026-03-01T11:40:00Z", wantMissed: 100, wantNext: "2026-03-01T11:41:00Z"},
		{name: "101 missed is too many: warned, the most recent still runs", schedule: everyMinute, earliest: "2026-03-01T10:00:00Z", now: "2026-03-01T11:41:05Z",
			wantScheduled: "2026-03-01T11:41:00Z", wantMissed: 101, wantTooMany: true, wantNext: "2026-03-01T11:42:00Z"},
		{name: "a year of missed minutes: counting stops at 101, the most recent runs", schedule: everyMinute,
			earliest: "2025-03-01T10:00:00Z", now: "2026-03-01T10:00:30Z",
			wantScheduled: "2026-03-01T10:00:00Z", wantMissed: 101, wantTooMany: true, wantNext: "2026-03-01T10:01:00Z"},
		{name: "years of a sparse schedule", schedule: "0 0 1 1 *", earliest: "1900-01-01T00:00:00Z", now: "2026-03-01T10:00:00Z",
			wantScheduled: "2026-01-01T00:00:00Z", wantMissed: 101, wantTooMany: true, wantNext: "2027-01-01T00:00:00Z"},
		{name: "an irregular schedule after an outage: the last minute of the last active hour", schedule: "* 3 * * *",
			earliest: "2026-02-01T00:00:00Z", now: "2026-03-01T10:00:00Z",
			wantScheduled: "2026-03-01T03:59:00Z", wantMissed: 101, wantTooMany: true, wantNext: "2026-03-02T03:00:00Z"},
		{name: "too many within a long deadline: the most recent inside it", schedule: everyMinute, earliest: "2026-03-01T00:00:00Z",
			now: "2026-03-01T10:05:05Z", deadline: ptr.To[int64](7200),
			wantScheduled: "2026-03-01T10:05:00Z", wantMissed: 101, wantTooMany: true, wantNext: "2026-03-01T10:06:00Z"},
		{name: "deadline: the most recent is within it", schedule: everyMinute, earliest: "2026-03-01T10:00:00Z", now: "2026-03-01T10:05:05Z",
			deadline: ptr.To[int64](10), wantScheduled: "2026-03-01T10:05:00Z", wantMissed: 1, wantNext: "2026-03-01T10:06:00Z"},
		{name: "deadline: the most recent is too late", schedule: everyMinute, earliest: "2026-03-01T10:00:00Z", now: "2026-03-01T10:05:30Z",
			deadline: ptr.To[int64](10), wantSkipped: true, wantNext: "2026-03-01T10:06:00Z"},
		{name: "deadline: nothing missed, nothing skipped", schedule: everyMinute, earliest: "2026-03-01T10:05:00Z", now: "2026-03-01T10:05:30Z",
			deadline: ptr.To[int64](10), wantNext: "2026-03-01T10:06:00Z"},
		{name: "deadline bounds the count: no too-many warning", schedule: everyMinute, earliest: "2026-03-01T00:00:00Z", now: "2026-03-01T10:05:05Z",
			deadline: ptr.To[int64](200), wantScheduled: "2026-03-01T10:05:00Z", wantMissed: 4, wantNext: "2026-03-01T10:06:00Z"},
		{name: "@hourly after an outage", schedule: "@hourly", earliest: "2026-03-01T07:00:00Z", now: "2026-03-01T10:59:59Z",
			wantScheduled: "2026-03-01T10:00:00Z", wantMissed: 3, wantNext: "2026-03-01T11:00:00Z"},
		{name: "impossible date never runs", schedule: "0 0 30 2 *", earliest: "2026-03-01T00:00:00Z", now: "2026-03-02T00:00:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseSchedule(tc.schedule, nil, time.UTC)
			require.NoError(t, err)
			p := planRuns(s, mustTime(t, tc.earliest), mustTime(t, tc.now), tc.deadline)
			assert.Equal(t, tc.wantScheduled, formatOrEmpty(p.Scheduled), "scheduled")
			assert.Equal(t, tc.wantMissed, p.Missed, "missed")
			assert.Equal(t, tc.wantTooMany, p.TooMany, "tooMany")
			assert.Equal(t, tc.wantSkipped, p.Skipped, "skipped")
			assert.Equal(t, tc.wantNext, formatOrEmpty(p.Next), "next")
		})
	}
}

// mostRecent agrees with walking every start time, for schedules of every shape and gaps of every length.
func TestMostRecentMatchesWalk(t *testing.T) {
	now := mustTime(t, "2026-03-01T10:07:30Z")
	for _, expr := range []string{"* * * * *", "*/7 * * * *", "* 3 * * *", "0 0 1 1 *", "15 10 * * 1-5", "@every 90s", "@hourly"} {
		s, err := parseSchedule(expr, nil, time.UTC)
		require.NoError(t, err)
		for _, back := range []time.Duration{0, time.Minute, 7 * time.Minute, 5 * time.Hour, 50 * time.Hour, 400 * 24 * time.Hour} {
			from := s.Next(now.Add(-back - time.Minute))
			if from.IsZero() || from.After(now) {
				continue
			}
			want := from
			for next := s.Next(from); !next.After(now); next = s.Next(next) {
				want = next
			}
			assert.Equal(t, want, mostRecent(s, from, now), "%s from %s", expr, from)
		}
	}
}

func formatOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
