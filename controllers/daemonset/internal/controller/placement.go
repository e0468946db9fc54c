package controller

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

// eligibilityOptions: like upstream's DaemonSet (and unlike BroadcastJob),
// resources are the scheduler's business; a pod that does not fit stays
// Pending and shows why.
var eligibilityOptions = nodeplacement.Options{}

// placementCache remembers, per DaemonSet generation and node, whether the
// node should run the daemon pod, so that a sync over N nodes costs N map
// lookups rather than N scheduling simulations (OpenKruise #1011 cached the
// simulated pod; here the verdicts themselves are kept). A verdict is
// recomputed when the DaemonSet's generation changes (its template did) or
// when the node changed in a way eligibility reads: the node handler bumps
// the node's epoch then (heartbeats do not).
type placementCache struct {
	mu     sync.Mutex
	epochs map[string]uint64
	sets   map[types.UID]*setPlacement
	// evaluations counts verdicts computed (tests and the bench read it).
	evaluations atomic.Uint64
}

type setPlacement struct {
	generation int64
	spec       *corev1.PodSpec // the template spec with the daemon tolerations, as pods get them
	eligible   nodeplacement.Eligibility
	verdicts   map[string]cachedVerdict
}

type cachedVerdict struct {
	epoch uint64
	v     nodeplacement.Verdict
}

func newPlacementCache() *placementCache {
	return &placementCache{epochs: map[string]uint64{}, sets: map[types.UID]*setPlacement{}}
}

// nodeChanged invalidates every verdict about node (added, deleted, or
// changed in what eligibility reads).
func (p *placementCache) nodeChanged(node string) {
	p.mu.Lock()
	p.epochs[node]++
	p.mu.Unlock()
}

// forget drops a deleted DaemonSet's verdicts.
func (p *placementCache) forget(uid types.UID) {
	p.mu.Lock()
	delete(p.sets, uid)
	p.mu.Unlock()
}

// verdicts returns the verdict of every node for ds, computing only the
// missing or stale ones. The lock is held throughout: verdicts are cheap
// once cached, and a first computation for one set is not worth doing twice.
func (p *placementCache) verdicts(logger klog.Logger, ds *appsv1alpha1.DaemonSet, nodes []*corev1.Node) map[string]nodeplacement.Verdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	sp := p.sets[ds.UID]
	if sp == nil || sp.generation != ds.Generation {
		spec := ds.Spec.Template.Spec.DeepCopy()
		addDaemonTolerations(spec)
		sp = &setPlacement{generation: ds.Generation, spec: spec,
			eligible: nodeplacement.New(logger, spec, eligibilityOptions), verdicts: make(map[string]cachedVerdict, len(nodes))}
		p.sets[ds.UID] = sp
	}
	out := make(map[string]nodeplacement.Verdict, len(nodes))
	for _, n := range nodes {
		epoch := p.epochs[n.Name]
		cv, ok := sp.verdicts[n.Name]
		if !ok || cv.epoch != epoch {
			cv = cachedVerdict{epoch: epoch, v: sp.eligible.Verdict(withoutDeletion(n))}
			sp.verdicts[n.Name] = cv
			p.evaluations.Add(1)
		}
		out[n.Name] = cv.v
	}
	if len(sp.verdicts) > 2*len(nodes)+16 { // nodes come and go: drop verdicts of nodes gone
		for name := range sp.verdicts {
			if _, ok := out[name]; !ok {
				delete(sp.verdicts, name)
			}
		}
	}
	return out
}

// withoutDeletion returns node as eligibility should see it for a daemon:
// a node being deleted (a finalizer holds it, e.g. while an autoscaler
// drains it) stays eligible, as in upstream's and OpenKruise's DaemonSet,
// so its log, metrics and CNI daemons keep running until the node object is
// gone. kit/nodeplacement rules such a node out (BroadcastJob's choice), so
// the check is handed a shallow copy without the deletion timestamp; the
// cached node itself is not modified.
func withoutDeletion(node *corev1.Node) *corev1.Node {
	if node.DeletionTimestamp == nil {
		return node
	}
	cp := *node
	cp.DeletionTimestamp = nil
	return &cp
}

// daemonTolerations are the tolerations every daemon pod gets (upstream's
// list): node problems the node lifecycle controller reports as taints must
// neither evict a daemon nor keep it off a node, and a cordoned node still
// runs its daemons.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// networkUnavailable is tolerated by host-network daemons only: they are
// what brings the node's network up.
var networkUnavailable = corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// addDaemonTolerations adds the daemon tolerations to spec, replacing one
// the spec already has with the same key, operator, value and effect (as
// upstream does), so a user's tolerationSeconds on not-ready does not limit
// a daemon.
func addDaemonTolerations(spec *corev1.PodSpec) {
	add := func(t corev1.Toleration) {
		for i := range spec.Tolerations {
			if o := spec.Tolerations[i]; o.Key == t.Key && o.Effect == t.Effect && o.Operator == t.Operator && o.Value == t.Value {
				spec.Tolerations[i] = t
				return
			}
		}
		spec.Tolerations = append(spec.Tolerations, t)
	}
	for _, t := range daemonTolerations {
		add(t)
	}
	if spec.HostNetwork {
		add(networkUnavailable)
	}
}
