package controller

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// scaleInput is what the scale decision looks at: the replica slots and
// every pod of the set by ordinal (terminating ones included).
type scaleInput struct {
	slots []int
	pods  map[int]*corev1.Pod
	// monotonic: podManagementPolicy OrderedReady.
	monotonic bool
	// maxUnavailable limits, with Parallel, how many slots may be
	// unavailable while pods are created (scaleStrategy.maxUnavailable);
	// 0: no limit.
	maxUnavailable  int
	minReadySeconds int32
	now             time.Time
}

// scalePlan is what one sync does to the replica slots.
type scalePlan struct {
	// create are the ordinals whose pod is created now, ascending.
	create []int
	// recreate are failed or succeeded pods in a slot: deleted now, created
	// again by a later sync.
	recreate []*corev1.Pod
	// condemn are pods outside the slots, deleted now, highest ordinal first.
	condemn []*corev1.Pod
	// waitingFor names the pod an OrderedReady set waits for; "" if none.
	waitingFor string
}

func (p scalePlan) empty() bool {
	return len(p.create) == 0 && len(p.recreate) == 0 && len(p.condemn) == 0
}

// planScale walks the slots in ordinal order as the upstream controller
// does. OrderedReady creates or deletes one pod per sync and stops at the
// first pod that is missing, terminating, not Running and Ready, or not yet
// available for minReadySeconds; condemned pods go only once every slot is
// healthy, highest ordinal first, one at a time. Parallel acts on every
// slot at once, within scaleStrategy.maxUnavailable for creations.
func planScale(in scaleInput) scalePlan {
	var plan scalePlan
	healthy := func(p *corev1.Pod) bool {
		return p.DeletionTimestamp == nil && podutil.IsRunningAndReady(p) && podutil.IsAvailable(p, in.minReadySeconds, in.now)
	}
	budget := in.maxUnavailable
	if budget > 0 {
		for _, o := range in.slots {
			if p := in.pods[o]; p != nil && !healthy(p) {
				budget--
			}
		}
	}
	for _, o := range in.slots {
		p := in.pods[o]
		switch {
		case p == nil:
			if len(plan.create) == burstReplicas {
				continue // the rest in later syncs
			}
			if in.maxUnavailable > 0 {
				if budget <= 0 {
					continue
				}
				budget--
			}
			plan.create = append(plan.create, o)
			if in.monotonic {
				return plan
			}
		case p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded):
			plan.recreate = append(plan.recreate, p)
			if in.monotonic {
				return plan
			}
		case in.monotonic && !healthy(p):
			plan.waitingFor = p.Name
			return plan
		}
	}
	condemned := condemnedPods(in.slots, in.pods)
	if !in.monotonic {
		for _, p := range condemned {
			if p.DeletionTimestamp == nil {
				plan.condemn = append(plan.condemn, p)
			}
		}
		return plan
	}
	if len(condemned) == 0 {
		return plan
	}
	// OrderedReady: the highest condemned ordinal goes first, and only when
	// no other condemned pod is unhealthy (a terminating one is waited for).
	target := condemned[0]
	for _, p := range condemned[1:] {
		if !healthy(p) {
			plan.waitingFor = p.Name
			return plan
		}
	}
	if target.DeletionTimestamp != nil {
		plan.waitingFor = target.Name
		return plan
	}
	plan.condemn = append(plan.condemn, target)
	return plan
}

// burstReplicas bounds the pods one sync creates (Parallel; OrderedReady
// creates one; kit/controller).
const burstReplicas = controller.MaxCreatesPerSync

// condemnedPods are the pods whose ordinal is not a slot, highest first.
func condemnedPods(slots []int, pods map[int]*corev1.Pod) []*corev1.Pod {
	var out []int
	for o := range pods {
		if !isSlot(slots, o) {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	res := make([]*corev1.Pod, 0, len(out))
	for _, o := range out {
		res = append(res, pods[o])
	}
	return res
}

// scaleMaxUnavailable is scaleStrategy.maxUnavailable (Parallel only),
// rounded down with a minimum of 1; 0 when unset.
func scaleMaxUnavailable(set *appsv1beta1.StatefulSet, replicas int) int {
	ss := set.Spec.ScaleStrategy
	if ss == nil || ss.MaxUnavailable == nil || set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ss.MaxUnavailable, replicas, false)
	if err != nil {
		return 0
	}
	return max(n, 1)
}

// availableIn is how long until a Ready pod has been Ready for
// minReadySeconds (plus a margin); 0 when it is not Ready or already is.
func availableIn(p *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	if minReadySeconds == 0 || p.DeletionTimestamp != nil || !podutil.IsRunningAndReady(p) {
		return 0
	}
	since, ok := podutil.ReadySince(p)
	if !ok {
		return 0
	}
	if d := since.Add(time.Duration(minReadySeconds) * time.Second).Sub(now); d > 0 {
		return d + 100*time.Millisecond
	}
	return 0
}
