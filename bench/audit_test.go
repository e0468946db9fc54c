package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The audit parser counts each request once (a watch logs two stages), by
// verb, only for the matching identity, and counts writes.
func TestCountEvents(t *testing.T) {
	log := strings.Join([]string{
		`{"auditID":"a","stage":"ResponseComplete","verb":"create","userAgent":"x","user":{"username":"` + clonesetUser + `"}}`,
		`{"auditID":"b","stage":"ResponseStarted","verb":"watch","userAgent":"x","user":{"username":"` + clonesetUser + `"}}`,
		`{"auditID":"b","stage":"ResponseComplete","verb":"watch","userAgent":"x","user":{"username":"` + clonesetUser + `"}}`,
		`{"auditID":"c","stage":"ResponseComplete","verb":"list","userAgent":"x","user":{"username":"` + clonesetUser + `"}}`,
		`{"auditID":"d","stage":"ResponseComplete","verb":"update","userAgent":"x","user":{"username":"system:serviceaccount:kube-system:replicaset-controller"}}`,
		`{"auditID":"e","stage":"ResponseComplete","verb":"create","userAgent":"flotilla-bench-raw/v1","user":{"username":"admin"}}`,
		`not json`,
	}, "\n")
	byVerb, writes := countEvents(strings.NewReader(log), isCloneSet)
	assert.Equal(t, map[string]int{"create": 1, "watch": 1, "list": 1}, byVerb)
	assert.Equal(t, 1, writes)
	byVerb, writes = countEvents(strings.NewReader(log), isKCM)
	assert.Equal(t, map[string]int{"update": 1}, byVerb)
	assert.Equal(t, 1, writes)
	byVerb, _ = countEvents(strings.NewReader(log), isRaw)
	assert.Equal(t, map[string]int{"create": 1}, byVerb)
}

func TestMetricValue(t *testing.T) {
	body := "# HELP x\nworkqueue_depth{name=\"cloneset\"} 3\nworkqueue_depth{name=\"replicaset\"} 7\nworkqueue_work_duration_seconds_count{name=\"cloneset\"} 42\n"
	assert.Equal(t, 3.0, metricValue(body, "workqueue_depth", `name="cloneset"`))
	assert.Equal(t, 42.0, metricValue(body, "workqueue_work_duration_seconds_count", `name="cloneset"`))
	assert.Equal(t, 0.0, metricValue(body, "workqueue_depth", `name="deployment"`))
}

// Conflicts are the matching identity's requests answered 409, each once.
func TestCountConflicts(t *testing.T) {
	log := strings.Join([]string{
		`{"auditID":"a","stage":"ResponseComplete","verb":"patch","user":{"username":"kwok-controller"},"responseStatus":{"code":409}}`,
		`{"auditID":"a","stage":"ResponseComplete","verb":"patch","user":{"username":"kwok-controller"},"responseStatus":{"code":409}}`,
		`{"auditID":"b","stage":"ResponseComplete","verb":"patch","user":{"username":"kwok-controller"},"responseStatus":{"code":200}}`,
		`{"auditID":"c","stage":"ResponseComplete","verb":"patch","user":{"username":"` + clonesetUser + `"},"responseStatus":{"code":409}}`,
	}, "\n")
	assert.Equal(t, 1, countConflicts(strings.NewReader(log), isKwok))
	assert.Equal(t, 1, countConflicts(strings.NewReader(log), isCloneSet))
	assert.Equal(t, 0, countConflicts(strings.NewReader(log), isRaw))
}

// A scale-up subject is reported by its median round.
func TestMedianRow(t *testing.T) {
	rows := []row{{subject: "a", wall: 3 * time.Second}, {subject: "b", wall: time.Second}, {subject: "c", wall: 2 * time.Second}}
	assert.Equal(t, "c", medianRow(rows).subject)
	assert.Equal(t, "b", medianRow(rows[:2]).subject, "lower median of an even count")
	assert.Equal(t, "3.00, 1.00, 2.00 s", roundWalls(rows))
}
