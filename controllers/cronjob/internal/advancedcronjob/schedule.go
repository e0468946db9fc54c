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

// maxMissedRuns is how many missed start times are counted before the controller gives up: past it, as in
// OpenKruise (and the upstream CronJob it copied), nothing is started, because so many misses mean a wrong clock
// or a wedged controller rather than runs anyone still wants.
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
	// TooMany is set when more than maxMissedRuns start times were missed; Scheduled is then zero.
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
			p.Scheduled = time.Time{}
			break
		}
	}
	if !p.Scheduled.IsZero() {
		p.Skipped = false
	}
	return p
}
