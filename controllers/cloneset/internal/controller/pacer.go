package controller

import (
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// statusInterval spaces the status writes of one CloneSet whose only news is
// its pod counters. While a thousand pods come up, their readiness changes
// many times a second; writing each change costs the API server (the
// bottleneck of a scale-up) a request per sync for a number that is stale a
// moment later. Anything else — generation, revisions, conditions other
// than Progressing's update time — is written at once.
const statusInterval = time.Second

// statusPacer remembers when each CloneSet's status was last written.
type statusPacer struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

// wait is how long a counters-only write for key must still wait at now: 0
// when it may go now.
func (p *statusPacer) wait(key types.NamespacedName, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(0, last.Add(statusInterval).Sub(now))
}

func (p *statusPacer) wrote(key types.NamespacedName, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[types.NamespacedName]time.Time{}
	}
	p.last[key] = now
}

func (p *statusPacer) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// countersOnly reports whether next differs from cur only in the pod
// counters (and the Progressing condition's lastUpdateTime, which moves with
// them).
func countersOnly(cur, next appsv1alpha1.CloneSetStatus) bool {
	strip := func(s appsv1alpha1.CloneSetStatus) appsv1alpha1.CloneSetStatus {
		s.Replicas, s.ReadyReplicas, s.AvailableReplicas = 0, 0, 0
		s.UpdatedReplicas, s.UpdatedReadyReplicas, s.UpdatedAvailableReplicas = 0, 0, 0
		s.Conditions = append([]appsv1alpha1.CloneSetCondition(nil), s.Conditions...)
		for i := range s.Conditions {
			if s.Conditions[i].Type == appsv1alpha1.CloneSetConditionTypeProgressing {
				s.Conditions[i].LastUpdateTime = metav1.Time{}
			}
		}
		return s
	}
	return apiequality.Semantic.DeepEqual(strip(cur), strip(next))
}
