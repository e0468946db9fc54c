package nodeplacement

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// unschedulableTaint is how the scheduler (and the node lifecycle controller, with some lag) see a
// cordoned node: a NoSchedule taint that only a matching toleration gets past.
var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// Options select the checks beyond the ones every caller makes (nodeName, nodeSelector, required node
// affinity, NoSchedule/NoExecute taints, cordon).
type Options struct {
	// ResourceFit also requires the pod's requests to fit the node's allocatable on their own (the node's
	// other pods are not counted: whether there is room left is the scheduler's call). OpenKruise's
	// BroadcastJob checks it; the DaemonSet controllers (upstream and OpenKruise) do not, and leave a pod
	// that does not fit Pending.
	ResourceFit bool
}

// Verdict is the answer for one node.
type Verdict struct {
	// ShouldRun: a pod of the spec belongs on the node (create one if missing).
	ShouldRun bool
	// ShouldContinueRunning: a pod of the spec already there may stay. It differs from ShouldRun only for a
	// node whose NoSchedule taint (or cordon, or resources) keeps new pods out while tolerating the running
	// one: NoSchedule does not evict, NoExecute does.
	ShouldContinueRunning bool
	// Reason says why not (empty when ShouldRun), for logs, events and tests.
	Reason string
}

// Eligibility decides whether a pod spec can run on a node. Build one per spec with New; it holds the parsed
// affinity and the summed requests, so asking it about many nodes costs no copy of the spec.
type Eligibility struct {
	logger   klog.Logger
	spec     *corev1.PodSpec
	affinity nodeaffinity.RequiredNodeAffinity
	requests corev1.ResourceList
	opts     Options
}

// New returns the Eligibility of spec. spec is retained and must not change while it is used (pass a
// template from a cache, which is read-only).
func New(logger klog.Logger, spec *corev1.PodSpec, opts Options) Eligibility {
	e := Eligibility{logger: logger, spec: spec, affinity: nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity), opts: opts}
	if opts.ResourceFit {
		e.requests = resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
	}
	return e
}

// Check reports whether node can run a pod of the spec and, if not, why.
func (e Eligibility) Check(node *corev1.Node) (bool, string) {
	v := e.Verdict(node)
	return v.ShouldRun, v.Reason
}

// Verdict answers for node: whether a new pod belongs there and whether a running one may stay.
func (e Eligibility) Verdict(node *corev1.Node) Verdict {
	no := func(why string) Verdict { return Verdict{Reason: why} }
	if node.DeletionTimestamp != nil {
		return no("node is being deleted")
	}
	if e.spec.NodeName != "" && e.spec.NodeName != node.Name {
		return no(fmt.Sprintf("template is bound to node %q", e.spec.NodeName))
	}
	match, err := e.affinity.Match(node)
	if err != nil {
		return no(fmt.Sprintf("invalid node affinity: %v", err))
	}
	if !match {
		return no("node selector or required node affinity does not match")
	}
	// Comparison operators (Gt/Lt) can only be in a stored template if the API server accepted them,
	// so honouring them here never widens what the scheduler would allow.
	if taint, found := schedulingcorev1.FindMatchingUntoleratedTaint(e.logger, node.Spec.Taints, e.spec.Tolerations, effect(corev1.TaintEffectNoExecute), true); found {
		return no(fmt.Sprintf("taint %s=%s:%s is not tolerated", taint.Key, taint.Value, taint.Effect))
	}
	// From here on a running pod may stay: what is left keeps new pods out but evicts nobody.
	if taint, found := schedulingcorev1.FindMatchingUntoleratedTaint(e.logger, node.Spec.Taints, e.spec.Tolerations, effect(corev1.TaintEffectNoSchedule), true); found {
		return Verdict{ShouldContinueRunning: true, Reason: fmt.Sprintf("taint %s=%s:%s is not tolerated", taint.Key, taint.Value, taint.Effect)}
	}
	if node.Spec.Unschedulable && !schedulingcorev1.TolerationsTolerateTaint(e.logger, e.spec.Tolerations, &unschedulableTaint, true) {
		return Verdict{ShouldContinueRunning: true, Reason: "node is unschedulable (cordoned)"}
	}
	if e.opts.ResourceFit {
		if why := insufficient(e.requests, node.Status.Allocatable); why != "" {
			return Verdict{ShouldContinueRunning: true, Reason: why}
		}
	}
	return Verdict{ShouldRun: true, ShouldContinueRunning: true}
}

func effect(e corev1.TaintEffect) func(*corev1.Taint) bool {
	return func(t *corev1.Taint) bool { return t.Effect == e }
}

// insufficient says which requests exceed the node's allocatable, "" if they fit. The checks are the scheduler's
// resource-fit ones on an empty node: room for one pod, then cpu, memory, ephemeral storage and scalar resources
// (extended, hugepages, prefixed native, attachable volumes) that are requested. Other names are not the
// scheduler's business and are ignored.
func insufficient(requests, allocatable corev1.ResourceList) string {
	var short []string
	if allocatable.Pods().Value() < 1 {
		short = append(short, "pods")
	}
	for name, q := range requests {
		if q.Sign() <= 0 || !fitChecked(name) {
			continue
		}
		if alloc := allocatable[name]; q.Cmp(alloc) > 0 {
			short = append(short, fmt.Sprintf("%s (requests %s, allocatable %s)", name, q.String(), alloc.String()))
		}
	}
	if len(short) == 0 {
		return ""
	}
	sort.Strings(short)
	return "insufficient " + strings.Join(short, ", ")
}

// fitChecked reports whether the scheduler's resource fit looks at a resource of this name.
func fitChecked(name corev1.ResourceName) bool {
	switch {
	case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage:
		return true
	case strings.Contains(string(name), "/"): // extended (example.com/gpu) and prefixed native (kubernetes.io/...)
		return true
	default:
		return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(name), "attachable-volumes-")
	}
}

// EligibilityChanged reports whether anything an Eligibility reads differs between two versions of a node
// (heartbeats and other status updates do not count), so node handlers re-enqueue owners only when a verdict
// can change.
func EligibilityChanged(oldNode, newNode *corev1.Node, opts Options) bool {
	if !mapsEqual(oldNode.Labels, newNode.Labels) || !taintsEqual(oldNode.Spec.Taints, newNode.Spec.Taints) ||
		oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable ||
		(oldNode.DeletionTimestamp == nil) != (newNode.DeletionTimestamp == nil) {
		return true
	}
	if !opts.ResourceFit {
		return false
	}
	if len(oldNode.Status.Allocatable) != len(newNode.Status.Allocatable) {
		return true
	}
	for name, q := range oldNode.Status.Allocatable {
		if nq, ok := newNode.Status.Allocatable[name]; !ok || q.Cmp(nq) != 0 {
			return true
		}
	}
	return false
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// taintsEqual compares taints ignoring TimeAdded, which the node lifecycle controller sets.
func taintsEqual(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Value != b[i].Value || a[i].Effect != b[i].Effect {
			return false
		}
	}
	return true
}
