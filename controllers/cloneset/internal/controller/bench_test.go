package controller

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchState is a CloneSet of n pods, a third at the current revision, some
// not ready, on n/50 nodes: the input of one sync of a large CloneSet.
func benchState(n int) *syncState {
	pods := make([]*corev1.Pod, 0, n)
	for i := range n {
		var opts []podOpt
		if i%3 == 0 {
			opts = append(opts, atRev(currentRev))
		}
		p := testPod(fmt.Sprintf("web-%05d", i), opts...)
		p.Spec.NodeName = fmt.Sprintf("node-%d", i%(n/50+1))
		p.CreationTimestamp = metav1.NewTime(now.Add(-time.Duration(i) * time.Second))
		if i%17 == 0 {
			p.Status.Conditions[1].Status = corev1.ConditionFalse
		}
		pods = append(pods, p)
	}
	cs := testCloneSet(int32(n))
	return testState(cs, pods...)
}

func BenchmarkCalculateDiffs5000(b *testing.B) {
	st := benchState(5000)
	b.ReportAllocs()
	for b.Loop() {
		_ = calculateDiffs(st.diffInput())
	}
}

func BenchmarkChoosePodsToDelete5000(b *testing.B) {
	st := benchState(5000)
	c := &Controller{}
	d := diffs{scaleDown: 500, scaleDownOld: 200, deleteReadyLimit: 500}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.choosePodsToDelete(st, d)
	}
}

func BenchmarkCalculateStatus5000(b *testing.B) {
	st := benchState(5000)
	in := statusInput{cs: st.cs, pods: st.pods, updateRevision: updateRev, currentRevision: currentRev, now: now}
	b.ReportAllocs()
	for b.Loop() {
		_ = calculateStatus(in)
	}
}
