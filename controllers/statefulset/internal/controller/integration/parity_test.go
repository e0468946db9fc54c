package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// workload drives one StatefulSet through the parity scenario: ours
// (apps.kruise.io/v1beta1 under this reconciler) or upstream's (apps/v1
// under kube-controller-manager).
type workload interface {
	create(replicas int32)
	change(mutate func(spec *specView))
	status() (current, update string, observed bool)
}

// specView is the part of the spec the scenario changes, shared by both
// APIs.
type specView struct {
	replicas  **int32
	image     *string
	partition **int32
}

type oursWorkload struct{ h *harness }

func (w oursWorkload) create(replicas int32) { w.h.create(newSet("db", replicas)) }

func (w oursWorkload) change(mutate func(*specView)) {
	w.h.modify("db", func(s *appsv1beta1.StatefulSet) {
		if s.Spec.UpdateStrategy.RollingUpdate == nil {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{}
		}
		mutate(&specView{&s.Spec.Replicas, &s.Spec.Template.Spec.Containers[0].Image, &s.Spec.UpdateStrategy.RollingUpdate.Partition})
	})
}

func (w oursWorkload) status() (string, string, bool) {
	s := w.h.get("db")
	return s.Status.CurrentRevision, s.Status.UpdateRevision, s.Status.ObservedGeneration == s.Generation
}

type upstreamWorkload struct{ h *harness }

func (w upstreamWorkload) create(replicas int32) {
	ours := newSet("db", replicas)
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: ours.Spec.Replicas, ServiceName: ours.Spec.ServiceName,
			Selector: ours.Spec.Selector, Template: ours.Spec.Template},
	}
	_, err := w.h.Env.Kube.AppsV1().StatefulSets(w.h.NS).Create(context.Background(), set, metav1.CreateOptions{})
	require.NoError(w.h.T, err)
}

func (w upstreamWorkload) change(mutate func(*specView)) {
	sets := testenv.ObjectsOf(w.h.T, w.h.Env.Kube.AppsV1().StatefulSets(w.h.NS), waitTimeout)
	sets.Modify("db", func(s *appsv1.StatefulSet) {
		if s.Spec.UpdateStrategy.RollingUpdate == nil {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		mutate(&specView{&s.Spec.Replicas, &s.Spec.Template.Spec.Containers[0].Image, &s.Spec.UpdateStrategy.RollingUpdate.Partition})
	})
}

func (w upstreamWorkload) status() (string, string, bool) {
	s, err := w.h.Env.Kube.AppsV1().StatefulSets(w.h.NS).Get(context.Background(), "db", metav1.GetOptions{})
	require.NoError(w.h.T, err)
	return s.Status.CurrentRevision, s.Status.UpdateRevision, s.Status.ObservedGeneration == s.Generation
}

// parityRecord is what the scenario observed, with revisions named by their
// number (1, 2) so the two controllers' revisions, whose hashes differ
// (apps/v1 templates get server-side defaults), compare.
type parityRecord struct {
	// steps: per step, the order of pod operations seen by a watch, the
	// pods with their revision number, and status currentRevision and
	// updateRevision as numbers.
	steps []string
}

// runParity runs: create 5, scale to 3, image v2 with partition 2, then
// partition 0. Each step waits for the pods and status to settle.
func runParity(h *harness, w workload) parityRecord {
	var rec parityRecord
	log := h.watchPods("db")
	seen := 0
	step := func(name string, wantPods string) {
		h.T.Helper()
		var pods []corev1.Pod
		testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
			pods = h.pods("db")
			cur, upd, observed := w.status()
			got := revisionSummary(h, pods)
			if !log.caughtUp(pods) {
				return false, fmt.Errorf("%s: the watch lags behind the pods", name)
			}
			if got != wantPods || !observed || cur == "" || upd == "" {
				return false, fmt.Errorf("%s: pods %s (want %s), status current=%s update=%s observed=%v", name, got, wantPods, cur, upd, observed)
			}
			wantCur := upd
			if name == "partition 2" {
				wantCur = "" // still rolling: current stays behind
			}
			if wantCur != "" && cur != upd {
				return false, fmt.Errorf("%s: currentRevision %s has not caught up with %s", name, cur, upd)
			}
			return true, nil
		})
		cur, upd, _ := w.status()
		ops := log.get()
		h.T.Logf("%s: operations %v", name, ops[seen:])
		rec.steps = append(rec.steps, fmt.Sprintf("%s: %s; pods %s; current r%d update r%d",
			name, operationOrder(ops[seen:]), revisionSummary(h, pods), revisionNumber(h, cur), revisionNumber(h, upd)))
		seen = len(ops)
	}
	w.create(5)
	step("create 5", "db-0@r1 db-1@r1 db-2@r1 db-3@r1 db-4@r1")
	w.change(func(s *specView) { *s.replicas = ptr.To[int32](3) })
	step("scale to 3", "db-0@r1 db-1@r1 db-2@r1")
	w.change(func(s *specView) { *s.image = imageV2; *s.partition = ptr.To[int32](2) })
	step("partition 2", "db-0@r1 db-1@r1 db-2@r2")
	w.change(func(s *specView) { *s.partition = ptr.To[int32](0) })
	step("partition 0", "db-0@r2 db-1@r2 db-2@r2")
	return rec
}

// operationOrder is the order in which pods were created, deleted and became
// Ready, each with repeats in a row collapsed: kube-controller-manager
// sometimes deletes a pod it just recreated once more (it acts on a cache
// that has not seen its own write yet), where this controller's
// expectations make it wait; what both must agree on is which pods change,
// in which order.
func operationOrder(ops []string) string {
	var created, deleted, ready []string
	add := func(list *[]string, name string) {
		if n := len(*list); n == 0 || (*list)[n-1] != name {
			*list = append(*list, name)
		}
	}
	for _, op := range ops {
		switch {
		case strings.HasPrefix(op, "ready "):
			add(&ready, strings.TrimPrefix(op, "ready "))
		case strings.HasPrefix(op, "+"):
			add(&created, op[1:])
		case strings.HasPrefix(op, "-"):
			add(&deleted, op[1:])
		}
	}
	return fmt.Sprintf("created %v deleted %v ready %v", created, deleted, ready)
}

// revisionSummary lists the Ready pods as name@r<revision number>; a pod
// not Ready yet shows as name@?.
func revisionSummary(h *harness, pods []corev1.Pod) string {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	out := ""
	for _, p := range pods {
		rev := "?"
		if podReady(&p) {
			rev = fmt.Sprintf("r%d", revisionNumber(h, p.Labels[pub.ControllerRevisionHashLabelKey]))
		}
		if out != "" {
			out += " "
		}
		out += p.Name + "@" + rev
	}
	return out
}

func revisionNumber(h *harness, name string) int64 {
	r, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return 0
	}
	return r.Revision
}

// TestUpstreamParity: the same scenario against an apps/v1 StatefulSet under
// kube-controller-manager and against ours yields the same pods, revisions,
// status and order of operations.
func TestUpstreamParity(t *testing.T) {
	h := newHarness(t)
	h.startController()
	up := &harness{Lab: &lab.Lab{T: t, Env: h.Env, NS: h.Env.Namespace(t), Client: h.Client, Timeout: waitTimeout}}
	theirs := runParity(up, upstreamWorkload{up})
	ours := runParity(h, oursWorkload{h})
	assert.Equal(t, theirs.steps, ours.steps)
	t.Logf("upstream: %v", theirs.steps)
}

// TestMigrateFromAppsV1: an apps/v1 StatefulSet deleted with
// --cascade=orphan and created again as apps.kruise.io/v1beta1 (the
// migration OpenKruise documents) gets its pods adopted under their names —
// each orphan is seen with the new set as its controller — not duplicated or
// stuck on names already taken; the set then settles.
func TestMigrateFromAppsV1(t *testing.T) {
	h := newHarness(t)
	h.startController()
	ctx := context.Background()
	upstreamWorkload{h}.create(3)
	h.waitPods("db", "upstream pods", readyNames("db-0", "db-1", "db-2"))
	orphan := metav1.DeletePropagationOrphan
	require.NoError(t, h.Env.Kube.AppsV1().StatefulSets(h.NS).Delete(ctx, "db", metav1.DeleteOptions{PropagationPolicy: &orphan}))
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, p := range h.pods("db") {
			if metav1.GetControllerOf(&p) != nil {
				return false, fmt.Errorf("pod %s still controlled", p.Name)
			}
		}
		return true, nil
	})
	orphans := uids(h.waitPods("db", "orphans ready", readyNames("db-0", "db-1", "db-2")))
	owners := h.watchControllers("db")
	set := h.create(newSet("db", 3))
	h.waitStatus("db", "settled", settled(3))
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for name, uid := range orphans {
			if owners.get(uid) != set.UID {
				return false, fmt.Errorf("orphan %s (%s) not seen adopted", name, uid)
			}
		}
		return true, nil
	})
	assert.Equal(t, []string{"db-0", "db-1", "db-2"}, names(h.pods("db")))
}

// controllerLog records, from a watch, the last controller UID seen on each
// pod UID.
type controllerLog struct {
	mu     sync.Mutex
	owners map[types.UID]types.UID
}

func (h *harness) watchControllers(name string) *controllerLog {
	l := &controllerLog{owners: map[types.UID]types.UID{}}
	h.onPodEvents(name, func(_ watch.EventType, p *corev1.Pod) {
		if ref := metav1.GetControllerOf(p); ref != nil {
			l.mu.Lock()
			l.owners[p.UID] = ref.UID
			l.mu.Unlock()
		}
	})
	return l
}

func (l *controllerLog) get(pod types.UID) types.UID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owners[pod]
}
