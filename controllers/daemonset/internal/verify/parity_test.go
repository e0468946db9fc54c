package verify

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// daemonSet drives one DaemonSet through the parity scenario: ours
// (apps.kruise.io/v1alpha1 under the in-process reconciler) or upstream's
// (apps/v1 under kube-controller-manager).
type daemonSet interface {
	harness() *harness
	create(tmpl corev1.PodTemplateSpec)
	// roll changes the image with the given rolling-update budgets.
	roll(image string, maxUnavailable, maxSurge intstr.IntOrString)
	status() dsStatus
}

// dsStatus is the part of the status both APIs share.
type dsStatus struct {
	Desired, Current, Misscheduled, Ready, Updated, Available, Unavailable int32
	Observed                                                               bool
}

func (s dsStatus) String() string {
	return fmt.Sprintf("desired %d current %d misscheduled %d ready %d updated %d available %d unavailable %d",
		s.Desired, s.Current, s.Misscheduled, s.Ready, s.Updated, s.Available, s.Unavailable)
}

type upstreamDS struct{ h *harness }

func (d upstreamDS) harness() *harness { return d.h }

func (d upstreamDS) create(tmpl corev1.PodTemplateSpec) {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: tmpl.Labels["app"]},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl},
	}
	_, err := d.h.Env.Kube.AppsV1().DaemonSets(d.h.NS).Create(context.Background(), ds, metav1.CreateOptions{})
	require.NoError(d.h.T, err, "create apps/v1 DaemonSet")
}

func (d upstreamDS) roll(image string, maxUnavailable, maxSurge intstr.IntOrString) {
	testenv.ObjectsOf(d.h.T, d.h.Env.Kube.AppsV1().DaemonSets(d.h.NS), waitTimeout).Modify(parityApp, func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Image = image
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge}}
	})
}

func (d upstreamDS) status() dsStatus {
	ds, err := d.h.Env.Kube.AppsV1().DaemonSets(d.h.NS).Get(context.Background(), parityApp, metav1.GetOptions{})
	require.NoError(d.h.T, err)
	s := ds.Status
	return dsStatus{s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.NumberMisscheduled, s.NumberReady,
		s.UpdatedNumberScheduled, s.NumberAvailable, s.NumberUnavailable, s.ObservedGeneration == ds.Generation}
}

type oursDS struct{ h *harness }

func (d oursDS) harness() *harness { return d.h }

func (d oursDS) create(tmpl corev1.PodTemplateSpec) {
	ds := &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: tmpl.Labels["app"]},
		Spec:       appsv1alpha1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl},
	}
	_, err := d.h.Client.AppsV1alpha1().DaemonSets(d.h.NS).Create(context.Background(), ds, metav1.CreateOptions{})
	require.NoError(d.h.T, err, "create Advanced DaemonSet")
}

func (d oursDS) roll(image string, maxUnavailable, maxSurge intstr.IntOrString) {
	testenv.ObjectsOf(d.h.T, d.h.Client.AppsV1alpha1().DaemonSets(d.h.NS), waitTimeout).Modify(parityApp, func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Image = image
		ds.Spec.UpdateStrategy = appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{Type: appsv1alpha1.StandardRollingUpdateType, MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge}}
	})
}

func (d oursDS) status() dsStatus {
	ds, err := d.h.Client.AppsV1alpha1().DaemonSets(d.h.NS).Get(context.Background(), parityApp, metav1.GetOptions{})
	require.NoError(d.h.T, err)
	s := ds.Status
	return dsStatus{s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.NumberMisscheduled, s.NumberReady,
		s.UpdatedNumberScheduled, s.NumberAvailable, s.NumberUnavailable, s.ObservedGeneration == ds.Generation}
}

const parityApp = "agent"

// knownNoScheduleStatus: kube-controller-manager v1.37's node-update queue
// (syncNodeUpdate) enqueues a DaemonSet only when a node needs a pod, must
// lose one, or the status already counts misscheduled pods; a NoSchedule
// taint on a node whose pod may keep running is none of these, so its status
// keeps counting the node as desired until the DaemonSet syncs for another
// reason (here: the next step). OpenKruise (and ours) enqueue on any change
// of shouldRun/shouldContinueRunning and count it misscheduled at once.
const knownNoScheduleStatus = "kube-controller-manager does not resync on a NoSchedule taint that leaves the pod running"

// paritySubject is one DaemonSet under observation during the scenario.
type paritySubject struct {
	name     string
	ds       daemonSet
	upstream bool
	watch    *podWatch
	skip     map[string]int
	steps    []string
}

// parityStep is what one step must end with: pods per node as
// n<i>=r<revision>, the status counters, and, during a rolling update
// (rolling set), the budgets the watch enforces.
type parityStep struct {
	name     string
	act      func()
	layout   string
	status   dsStatus
	rolling  bool
	maxSurge int
	maxUnav  int
	eligible []int // node indexes the unavailability budget counts
	// upstreamStatus, when set, is what kube-controller-manager shows
	// instead of status after this step: a known difference, explained in
	// known.
	upstreamStatus *dsStatus
	known          string
}

// runParity runs the steps against every subject at once (the node changes
// hit both DaemonSets alike), waiting after each step until every subject
// shows the step's layout and status and its watch has caught up, and
// records per subject: per node, the operations of the step; the layout;
// the status.
func runParity(t *testing.T, f *fleet, subjects []*paritySubject, steps []parityStep) {
	for _, s := range subjects {
		if s.watch == nil {
			s.watch = s.ds.harness().watchPods(parityApp)
			s.skip = map[string]int{}
		}
	}
	for _, step := range steps {
		if step.rolling {
			var nodes []string
			for _, i := range step.eligible {
				nodes = append(nodes, f.names[i])
			}
			for _, s := range subjects {
				s.watch.enforce(s.ds.harness(), parityApp, nodes, step.maxSurge, step.maxUnav)
			}
		}
		step.act()
		for _, s := range subjects {
			h := s.ds.harness()
			want := step.status
			if s.upstream && step.upstreamStatus != nil {
				want = *step.upstreamStatus
			}
			testenv.Eventually(t, waitTimeout, func() (bool, error) {
				got, st := h.layout(parityApp, f.names), s.ds.status()
				if got != step.layout || st != want {
					return false, fmt.Errorf("%s, %s: pods %q (want %q), status %v observed %v (want %v)", step.name, s.name, got, step.layout, st, st.Observed, want)
				}
				if err := s.watch.caughtUp(h, parityApp); err != nil {
					return false, fmt.Errorf("%s, %s: %w", step.name, s.name, err)
				}
				return true, nil
			})
			ops, next := s.watch.opsSince(s.skip, h.revisions(), f.names)
			s.skip = next
			var perNode []string
			for _, n := range slices.Sorted(maps.Keys(ops)) {
				perNode = append(perNode, n+": "+ops[n])
			}
			status := want.String()
			if step.upstreamStatus != nil {
				status = "status differs: " + step.known
				t.Logf("%s: %s: status %v (known difference: %s)", s.name, step.name, want, step.known)
			}
			rec := fmt.Sprintf("%s: ops {%s}; pods %s; %s", step.name, strings.Join(perNode, "; "), step.layout, status)
			if step.rolling {
				p, violations := s.watch.relax()
				assert.Empty(t, violations, "%s, %s", step.name, s.name)
				rec += "; " + p.String()
			}
			t.Logf("%s: %s", s.name, rec)
			s.steps = append(s.steps, rec)
		}
	}
}

// parityScenario: five nodes, then a sixth; one labelled out of the
// selector, one tainted NoSchedule (its pod stays, misscheduled), one
// tainted NoExecute (its pod goes); a rolling update with maxUnavailable 1,
// then one with maxSurge 1.
func parityScenario(f *fleet, subjects []*paritySubject) []parityStep {
	each := func(do func(daemonSet)) func() {
		return func() {
			for _, s := range subjects {
				do(s.ds)
			}
		}
	}
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	return []parityStep{
		{name: "create", act: each(func(d daemonSet) { d.create(f.template(parityApp, imageV1)) }),
			layout: "n0=r1 n1=r1 n2=r1 n3=r1 n4=r1", status: dsStatus{5, 5, 0, 5, 5, 5, 0, true}},
		{name: "node added", act: func() { f.add(1) },
			layout: "n0=r1 n1=r1 n2=r1 n3=r1 n4=r1 n5=r1", status: dsStatus{6, 6, 0, 6, 6, 6, 0, true}},
		{name: "node labelled out", act: func() { f.label(f.names[1], "out") },
			layout: "n0=r1 n2=r1 n3=r1 n4=r1 n5=r1", status: dsStatus{5, 5, 0, 5, 5, 5, 0, true}},
		{name: "node tainted NoSchedule", act: func() { f.taint(f.names[2], corev1.TaintEffectNoSchedule) },
			layout: "n0=r1 n2=r1 n3=r1 n4=r1 n5=r1", status: dsStatus{4, 4, 1, 4, 4, 4, 0, true},
			upstreamStatus: &dsStatus{5, 5, 0, 5, 5, 5, 0, true}, known: knownNoScheduleStatus},
		{name: "node tainted NoExecute", act: func() { f.taint(f.names[3], corev1.TaintEffectNoExecute) },
			layout: "n0=r1 n2=r1 n4=r1 n5=r1", status: dsStatus{3, 3, 1, 3, 3, 3, 0, true}},
		{name: "rolling update maxUnavailable 1", act: each(func(d daemonSet) { d.roll(imageV2, one, zero) }),
			layout: "n0=r2 n4=r2 n5=r2", status: dsStatus{3, 3, 0, 3, 3, 3, 0, true},
			rolling: true, maxSurge: 0, maxUnav: 1, eligible: []int{0, 4, 5}},
		{name: "rolling update maxSurge 1", act: each(func(d daemonSet) { d.roll(imageV3, zero, one) }),
			layout: "n0=r3 n4=r3 n5=r3", status: dsStatus{3, 3, 0, 3, 3, 3, 0, true},
			rolling: true, maxSurge: 1, maxUnav: 0, eligible: []int{0, 4, 5}},
	}
}

// TestUpstreamParity: an apps/v1 DaemonSet under kube-controller-manager and
// an Advanced DaemonSet under ours, on the same kwok nodes at the same time,
// go through the same node changes and rolling updates and end each step
// with the same pods per node, the same status counters and, per node, the
// same order of creations, deletions and readiness; both keep the
// rolling-update budgets at every pod event.
func TestUpstreamParity(t *testing.T) {
	h := newHarness(t)
	f := h.newFleet(5)
	theirs := &paritySubject{name: "apps/v1 (kube-controller-manager)", ds: upstreamDS{h.another()}, upstream: true}
	oh := h.another()
	startOurs(oh)
	ours := &paritySubject{name: "apps.kruise.io/v1alpha1 (ours)", ds: oursDS{oh}}
	subjects := []*paritySubject{theirs, ours}
	runParity(t, f, subjects, parityScenario(f, subjects))
	assert.Equal(t, theirs.steps, ours.steps)
}

// TestUpstreamPodParity: the pod an Advanced DaemonSet creates on a node is
// the pod kube-controller-manager creates for the same apps/v1 DaemonSet:
// same metadata (generateName, labels, annotations, finalizers) and the same
// spec as stored (node affinity pinning the node, the daemon tolerations in
// the same order, defaults), but for the KruisePodReady readiness gate that
// OpenKruise gives every pod of its workloads (the lifecycle hook's
// markPodNotReady needs it).
func TestUpstreamPodParity(t *testing.T) {
	h := newHarness(t)
	f := h.newFleet(1)
	theirs, ours := upstreamDS{h.another()}, oursDS{h.another()}
	startOurs(ours.h)
	for _, d := range []daemonSet{theirs, ours} {
		d.create(f.template(parityApp, imageV1))
	}
	for _, d := range []daemonSet{theirs, ours} {
		testenv.Eventually(t, waitTimeout, func() (bool, error) {
			if got := d.harness().layout(parityApp, f.names); got != "n0=r1" {
				return false, fmt.Errorf("pods %s", got)
			}
			return true, nil
		})
	}
	oursShape := podShape(t, ours.h, f.names[0])
	kruiseGate := corev1.PodReadinessGate{ConditionType: appspub.KruisePodReadyConditionType}
	assert.Contains(t, oursShape.Spec.ReadinessGates, kruiseGate)
	oursShape.Spec.ReadinessGates = slices.DeleteFunc(oursShape.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g == kruiseGate })
	if len(oursShape.Spec.ReadinessGates) == 0 {
		oursShape.Spec.ReadinessGates = nil
	}
	assert.Equal(t, podShape(t, theirs.h, f.names[0]), oursShape)
}

// podShape is the live pod of h's DaemonSet on node as the API server
// stores it, without what is unique to the object or to its controller:
// name, uid, owner, timestamps, resource version, status, the name of the
// service-account token volume, and the value of the revision hash (the
// hashes differ; that both carry one is compared). The
// pod-template-generation label is left out too: upstream's pods carry it
// because the API server annotates every apps/v1 DaemonSet with
// deprecated.daemonset.template.generation; an Advanced DaemonSet has that
// annotation only if its author wrote it (then its pods carry the label
// too, as OpenKruise's do: TestMigrateFromAppsV1).
func podShape(t *testing.T, h *harness, node string) corev1.Pod {
	t.Helper()
	for _, p := range h.pods(parityApp) {
		if nodeplacement.TargetNode(&p) != node {
			continue
		}
		shape := corev1.Pod{Spec: *p.Spec.DeepCopy()}
		shape.Labels = maps.Clone(p.Labels)
		if _, ok := shape.Labels[revisionHashLabel]; ok {
			shape.Labels[revisionHashLabel] = "<hash>"
		}
		delete(shape.Labels, "pod-template-generation")
		for i := range shape.Spec.Volumes {
			if strings.HasPrefix(shape.Spec.Volumes[i].Name, "kube-api-access-") {
				shape.Spec.Volumes[i].Name = "kube-api-access"
			}
		}
		for i := range shape.Spec.Containers {
			for j := range shape.Spec.Containers[i].VolumeMounts {
				if m := &shape.Spec.Containers[i].VolumeMounts[j]; strings.HasPrefix(m.Name, "kube-api-access-") {
					m.Name = "kube-api-access"
				}
			}
		}
		shape.Annotations = p.Annotations
		shape.Finalizers = p.Finalizers
		shape.GenerateName = p.GenerateName
		return shape
	}
	t.Fatalf("no pod on node %s", node)
	return corev1.Pod{}
}
