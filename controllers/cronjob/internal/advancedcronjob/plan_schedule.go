package advancedcronjob

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Reasons of the Warning events for a spec the API server accepted but the controller cannot run.
const (
	reasonInvalidSchedule = "InvalidSchedule"
	reasonUnknownTimeZone = "UnknownTimeZone"
)

// maxMissedRuns is how many missed start times are counted one by one. Past it the controller warns (so many
// misses mean an outage, a clock jump or a long pause) and still starts the most recent one, as the upstream
// CronJob controller (v2) does. OpenKruise starts nothing then, and since the count restarts from the last run it
// never falls under the limit again: the job is wedged until someone edits it. That wedge is deliberately not kept.
const maxMissedRuns = 100

// specError is a spec problem that no retry fixes; Reason is the Warning event's reason.
type specError struct {
	Reason string
	Err    error
}

func (e *specError) Error() string { return e.Err.Error() }
func (e *specError) Unwrap() error { return e.Err }

// schedule is a parsed cron schedule read in one time zone.
type schedule struct {
	cron cron.Schedule
	loc  *time.Location
}

// Next returns the first start time strictly after t, or the zero time when there is none within five years
// (e.g. "0 0 30 2 *").
func (s schedule) Next(t time.Time) time.Time { return s.cron.Next(t.In(s.loc)) }

// parseSchedule parses spec.schedule in standard cron syntax (five fields, @hourly-style descriptors, @every
// <duration>, an optional TZ=/CRON_TZ= prefix) and applies spec.timeZone. Without either zone the schedule is read
// in defaultLoc (the controller's local zone). The returned error is always a *specError.
func parseSchedule(expr string, timeZone *string, defaultLoc *time.Location) (schedule, error) {
	trimmed := strings.TrimSpace(expr)
	hasPrefix := strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=")
	loc := defaultLoc
	if timeZone != nil {
		if hasPrefix {
			return schedule{}, &specError{reasonInvalidSchedule,
				errors.New("spec.schedule must not carry a TZ= or CRON_TZ= prefix when spec.timeZone is set")}
		}
		if *timeZone == "" || *timeZone == "Local" {
			return schedule{}, &specError{reasonUnknownTimeZone,
				fmt.Errorf("spec.timeZone %q is not an IANA time zone name", *timeZone)}
		}
		l, err := time.LoadLocation(*timeZone)
		if err != nil {
			return schedule{}, &specError{reasonUnknownTimeZone, fmt.Errorf("spec.timeZone %q: %w", *timeZone, err)}
		}
		loc = l
	}
	parsed, err := cron.ParseStandard(trimmed)
	if err != nil {
		return schedule{}, &specError{reasonInvalidSchedule, fmt.Errorf("spec.schedule %q: %w", expr, err)}
	}
	if spec, ok := parsed.(*cron.SpecSchedule); ok {
		if hasPrefix {
			loc = spec.Location // the prefix chose the zone
		}
		spec.Location = loc
	}
	return schedule{cron: parsed, loc: loc}, nil
}

// runPlan is what the schedule says about one moment.
type runPlan struct {
	// Scheduled is the most recent start time not yet run that is still within the starting deadline; zero if
	// none is due.
	Scheduled time.Time
	// Missed counts the start times due since the last run (within the deadline), capped at maxMissedRuns+1.
	Missed int
	// TooMany is set when more than maxMissedRuns start times were missed; Scheduled is still the most recent.
	TooMany bool
	// Skipped is set when start times were missed but all of them lie beyond the starting deadline.
	Skipped bool
	// Next is the first start time after now; zero if there is none.
	Next time.Time
}

// planRuns looks at the start times in (earliest, now]: earliest is the last scheduled time, or the object's
// creation when it never ran. With a starting deadline, start times older than now-deadline are skipped.
func planRuns(s schedule, earliest, now time.Time, deadlineSeconds *int64) runPlan {
	p := runPlan{Next: s.Next(now)}
	if deadlineSeconds != nil {
		windowStart := now.Add(-time.Duration(*deadlineSeconds) * time.Second)
		if windowStart.After(earliest) {
			if first := s.Next(earliest); !first.IsZero() && first.Before(windowStart) {
				p.Skipped = true
			}
			earliest = windowStart
		}
	}
	t := s.Next(earliest)
	for ; !t.IsZero() && !t.After(now); t = s.Next(t) {
		p.Missed++
		p.Scheduled = t
		if p.Missed > maxMissedRuns {
			p.TooMany = true
			p.Scheduled = mostRecent(s, t, now)
			break
		}
	}
	if !p.Scheduled.IsZero() {
		p.Skipped = false
	}
	return p
}

// mostRecent returns the last start time in [from, now], from being a start time not after now, without walking
// every start time in between (a year of an every-minute schedule is half a million): it looks back from now over
// windows doubling from a minute until one holds a start time, then walks forward inside that window only. The
// window before it was empty, so the walk covers at most the start times of one window's older half.
func mostRecent(s schedule, from, now time.Time) time.Time {
	if every, ok := s.cron.(cron.ConstantDelaySchedule); ok {
		// "@every" counts from the previous start time, not from a fixed grid: looking back from now would land
		// between two of them. Its start times from `from` on are from + k·delay (whole seconds, as Next makes them).
		return from.Add(now.Sub(from) / every.Delay * every.Delay)
	}
	for d := time.Minute; ; d *= 2 {
		lo := now.Add(-d)
		if !lo.After(from) {
			return lastUpTo(s, from, now)
		}
		if t := s.Next(lo); !t.IsZero() && !t.After(now) {
			return lastUpTo(s, t, now)
		}
	}
}

// lastUpTo walks forward from the start time t and returns the last start time not after now.
func lastUpTo(s schedule, t, now time.Time) time.Time {
	for next := s.Next(t); !next.IsZero() && !next.After(now); next = s.Next(next) {
		t = next
	}
	return t
}
