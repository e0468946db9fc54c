package podutil

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// benchPods builds n varied pods spread over n/50 nodes.
func benchPods(n int) []*corev1.Pod {
	r := rand.New(rand.NewPCG(7, 11))
	nodes := max(n/50, 1)
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		opts := []podOpt{
			created(ago(time.Duration(r.IntN(3600)) * time.Second)),
			restarts(int32(r.IntN(3)), int32(r.IntN(2))),
		}
		switch r.IntN(20) {
		case 0:
			opts = append(opts, phase(corev1.PodPending))
		case 1:
			opts = append(opts, onNode(fmt.Sprintf("node-%d", r.IntN(nodes))), phase(corev1.PodPending))
		case 2:
			opts = append(opts, onNode(fmt.Sprintf("node-%d", r.IntN(nodes))), phase(corev1.PodRunning), notReady())
		default:
			opts = append(opts, onNode(fmt.Sprintf("node-%d", r.IntN(nodes))), phase(corev1.PodRunning),
				readyAt(ago(time.Duration(r.IntN(600))*time.Second)))
		}
		switch r.IntN(10) {
		case 0:
			opts = append(opts, cost(strconv.Itoa(r.IntN(200)-100)))
		case 1:
			opts = append(opts, cost("not-a-number"))
		case 2:
			opts = append(opts, lifecycle(pub.LifecycleStateUpdating))
		}
		pods[i] = newPod(fmt.Sprintf("cs-%05d", i), opts...)
	}
	return pods
}

// BenchmarkSortForDeletion5000 sorts 5,000 pods. Allocations are a constant
// handful per sort (keys, index and result slices), none per comparison.
func BenchmarkSortForDeletion5000(b *testing.B) {
	pods := benchPods(5000)
	rank := RankBySameNode(pods)
	b.ReportAllocs()
	for b.Loop() {
		_ = SortForDeletion(pods, rank, t0)
	}
}

func TestSortForDeletionAllocations(t *testing.T) {
	pods := benchPods(1000)
	rank := RankBySameNode(pods)
	allocs := testing.AllocsPerRun(5, func() { _ = SortForDeletion(pods, rank, t0) })
	if allocs > 5 {
		t.Fatalf("SortForDeletion of %d pods made %v allocations, want a constant few", len(pods), allocs)
	}
}
