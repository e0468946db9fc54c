package spread

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// GroupBySubset maps each subset of ws to the workload's pods its
// annotation puts there; the rest (no annotation, another
// WorkloadSpread's, a subset that no longer exists) go to FakeSubsetName.
func GroupBySubset(ws *appsv1alpha1.WorkloadSpread, pods []*corev1.Pod) map[string][]*corev1.Pod {
	out := make(map[string][]*corev1.Pod, len(ws.Spec.Subsets)+1)
	for _, s := range ws.Spec.Subsets {
		out[s.Name] = nil
	}
	for _, p := range pods {
		in := InjectedOf(p)
		if in != nil && in.Name == ws.Name {
			if _, ok := out[in.Subset]; ok {
				out[in.Subset] = append(out[in.Subset], p)
				continue
			}
		}
		out[FakeSubsetName] = append(out[FakeSubsetName], p)
	}
	return out
}

// SubsetResult is one subset's computed status and what the reconciler
// reports or waits for.
type SubsetResult struct {
	Status appsv1alpha1.WorkloadSpreadSubsetStatus
	// ExpiredCreating and ExpiredDeleting are the pods the webhook
	// admitted that did not appear or go in time (Warning events).
	ExpiredCreating, ExpiredDeleting []string
	// Next is when the status changes by time alone (an entry expires), 0
	// for never.
	Next time.Duration
}

// SubsetStatus counts one subset as OpenKruise does: replicas are its
// active pods; missingReplicas starts at the limit and goes down by one
// per active pod and per creatingPods entry not seen yet (kept
// CreatePodTimeout), up by one per active pod still in deletingPods (kept
// DeletePodTimeout); conditions are carried from old.
func SubsetStatus(s *appsv1alpha1.WorkloadSpreadSubset, pods []*corev1.Pod, old *appsv1alpha1.WorkloadSpreadSubsetStatus, replicas int32, now time.Time) (SubsetResult, error) {
	max, err := MaxReplicas(s, replicas)
	if err != nil {
		return SubsetResult{}, err
	}
	r := SubsetResult{Status: appsv1alpha1.WorkloadSpreadSubsetStatus{Name: s.Name, MissingReplicas: max}}
	st := &r.Status
	creating := map[string]metav1.Time{}
	var deleting map[string]metav1.Time
	if old != nil {
		for k, v := range old.CreatingPods {
			creating[k] = v
		}
		deleting = old.DeletingPods
		st.Conditions = append(st.Conditions, old.Conditions...)
	}
	soon := func(d time.Duration) {
		if d > 0 && (r.Next == 0 || d < r.Next) {
			r.Next = d
		}
	}
	for _, p := range pods {
		if in := InjectedOf(p); in != nil && in.UID != "" {
			delete(creating, in.UID)
		} else {
			delete(creating, p.Name)
		}
		if !podutil.IsActive(p) {
			continue
		}
		st.Replicas++
		if st.MissingReplicas > 0 {
			st.MissingReplicas--
		}
		if t, ok := deleting[p.Name]; ok {
			due := t.Add(DeletePodTimeout)
			if !due.After(now) {
				r.ExpiredDeleting = append(r.ExpiredDeleting, p.Name)
				continue
			}
			if st.DeletingPods == nil {
				st.DeletingPods = map[string]metav1.Time{}
			}
			st.DeletingPods[p.Name] = t
			if st.MissingReplicas < max {
				st.MissingReplicas++
			}
			soon(due.Sub(now))
		}
	}
	for k, t := range creating {
		due := t.Add(CreatePodTimeout)
		if !due.After(now) {
			r.ExpiredCreating = append(r.ExpiredCreating, k)
			continue
		}
		if st.CreatingPods == nil {
			st.CreatingPods = map[string]metav1.Time{}
		}
		st.CreatingPods[k] = t
		if st.MissingReplicas > 0 {
			st.MissingReplicas--
		}
		soon(due.Sub(now))
	}
	return r, nil
}

// Missed are the pods of the workload the webhook should have placed and
// did not: no annotation of ws, created after since (the moment the
// webhook's scope covered ws), not terminating. Pods created before
// WorkloadSpread existed are not missed.
func Missed(ws *appsv1alpha1.WorkloadSpread, pods []*corev1.Pod, since time.Time) []string {
	var out []string
	for _, p := range pods {
		in := InjectedOf(p)
		if (in == nil || in.Name != ws.Name) && podutil.IsActive(p) && p.CreationTimestamp.After(since) {
			out = append(out, p.Name)
		}
	}
	return out
}
