package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// unready makes kwok keep container "main" of every pod unready.
func unready(set *appsv1beta1.StatefulSet) {
	set.Spec.Template.Annotations = map[string]string{"sim.kwok.x-k8s.io/unready-containers": "main"}
}

// podLog records, from a watch started before the test acts, the order in
// which pods were added, became Ready and were deleted ("+web-0", "ready
// web-0", "-web-2").
type podLog struct {
	mu      sync.Mutex
	entries []string
	ready   map[types.UID]bool
	gone    map[types.UID]bool
}

func (h *harness) watchPods(name string) *podLog {
	h.T.Helper()
	l := &podLog{ready: map[types.UID]bool{}, gone: map[types.UID]bool{}}
	h.onPodEvents(name, l.observe)
	return l
}

func (l *podLog) observe(t watch.EventType, p *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t == watch.Added {
		l.entries = append(l.entries, "+"+p.Name)
	}
	switch {
	case t == watch.Deleted || p.DeletionTimestamp != nil:
		if !l.gone[p.UID] {
			l.gone[p.UID] = true
			l.entries = append(l.entries, "-"+p.Name)
		}
	case podReady(p) && !l.ready[p.UID]:
		l.ready[p.UID] = true
		l.entries = append(l.entries, "ready "+p.Name)
	}
}

// wait polls until the log holds exactly want (the watch may lag behind
// what a GET already shows).
func (l *podLog) wait(t *testing.T, want ...string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		if got := l.get(); !equalStrings(got, want) {
			return false, fmt.Errorf("watch saw %v, want %v", got, want)
		}
		return true, nil
	})
}

// caughtUp reports whether the log's last word on every pod agrees with
// pods (Ready ones seen Ready) and on every other pod it saw that it is gone.
func (l *podLog) caughtUp(pods []corev1.Pod) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := map[string]string{}
	for _, e := range l.entries {
		name := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(e, "ready "), "+"), "-")
		last[name] = e
	}
	live := map[string]bool{}
	for _, p := range pods {
		live[p.Name] = true
		if podReady(&p) && last[p.Name] != "ready "+p.Name {
			return false
		}
	}
	for name, e := range last {
		if !live[name] && e != "-"+name {
			return false
		}
	}
	return true
}

func (l *podLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.entries...)
}

// TestOrderedReadyIdentityAndClaims: pods come up one at a time in ordinal
// order, each after its predecessor is Ready, with their stable identity and
// a claim created before the pod; a deleted pod comes back under its name
// with its claim; scale-down removes the highest ordinal first and keeps the
// claims (Retain).
func TestOrderedReadyIdentityAndClaims(t *testing.T) {
	h := newHarness(t)
	h.startController()
	log := h.watchPods("web")
	h.create(newSet("web", 3, withClaim))
	pods := h.waitPods("web", "web-0..2 ready", readyNames("web-0", "web-1", "web-2"))
	set := h.waitStatus("web", "settled", settled(3))

	// OrderedReady creates each pod after its predecessor is Ready.
	log.wait(t, "+web-0", "ready web-0", "+web-1", "ready web-1", "+web-2", "ready web-2")
	for i, p := range pods {
		assert.Equal(t, p.Name, p.Labels[pub.StatefulSetPodNameLabel])
		assert.Equal(t, strconv.Itoa(i), p.Labels[pub.PodIndexLabel])
		assert.Equal(t, set.Status.UpdateRevision, p.Labels[pub.ControllerRevisionHashLabelKey])
		assert.Equal(t, "Normal", p.Labels[pub.LifecycleStateKey])
		assert.Equal(t, p.Name, p.Spec.Hostname)
		assert.Equal(t, "web", p.Spec.Subdomain)
		require.NotNil(t, metav1.GetControllerOf(&p))
		assert.Equal(t, set.UID, metav1.GetControllerOf(&p).UID)
		claimName := fmt.Sprintf("data-web-%d", i)
		assert.Equal(t, claimName, p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
		claim := h.claim(claimName)
		require.NotNil(t, claim, claimName)
		assert.Equal(t, "web", claim.Labels["app"])
		assert.Empty(t, claim.OwnerReferences, "Retain/Retain: the claim has no owner")
		assert.False(t, claim.CreationTimestamp.After(p.CreationTimestamp.Time), "claim created before its pod")
	}

	claimUID := h.claim("data-web-1").UID
	require.NoError(t, h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), "web-1", metav1.DeleteOptions{}))
	pods = h.waitPods("web", "web-1 recreated", func(ps []corev1.Pod) bool {
		return readyNames("web-0", "web-1", "web-2")(ps) && ps[1].UID != pods[1].UID
	})
	assert.Equal(t, claimUID, h.claim("data-web-1").UID, "a recreated pod gets its claim back")

	before := len(log.get())
	h.modify("web", func(s *appsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	h.waitPods("web", "scaled down to web-0", readyNames("web-0"))
	h.waitStatus("web", "settled at 1", settled(1))
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		if deleted := deletions(log.get()[before:]); len(deleted) != 2 {
			return false, fmt.Errorf("deletions seen: %v", deleted)
		}
		return true, nil
	})
	assert.Equal(t, []string{"-web-2", "-web-1"}, deletions(log.get()[before:]), "highest ordinal first")
	for _, n := range []string{"data-web-1", "data-web-2"} {
		assert.NotNil(t, h.claim(n), "%s retained after scale-down", n)
	}
}

func deletions(entries []string) []string {
	var out []string
	for _, e := range entries {
		if e[0] == '-' {
			out = append(out, e)
		}
	}
	return out
}

// TestOrderedReadyWaitsParallelDoesNot: with pods that never become Ready,
// OrderedReady stops at the first one while Parallel creates them all.
func TestOrderedReadyWaitsParallelDoesNot(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("ordered", 3, unready))
	h.create(newSet("burst", 3, unready, parallel))
	h.waitPods("burst", "all three created", func(ps []corev1.Pod) bool { return len(ps) == 3 })
	h.waitPods("ordered", "web-0 created", func(ps []corev1.Pod) bool { return len(ps) == 1 })
	testenv.Consistently(t, 3*time.Second, func() error {
		if ps := h.pods("ordered"); len(ps) != 1 {
			return fmt.Errorf("OrderedReady went past an unready pod: %v", names(ps))
		}
		return nil
	})
	h.patchPod("ordered-0", `{"metadata":{"annotations":{"sim.kwok.x-k8s.io/unready-containers":null}}}`)
	h.waitPods("ordered", "the next pod once ordered-0 is Ready", func(ps []corev1.Pod) bool {
		return len(ps) == 2 && ps[1].Name == "ordered-1"
	})
}

// TestParallelScaleMaxUnavailable: scaleStrategy.maxUnavailable bounds how
// many pods may be unavailable while a Parallel set scales up.
func TestParallelScaleMaxUnavailable(t *testing.T) {
	h := newHarness(t)
	h.startController()
	two := intstr.FromInt32(2)
	h.create(newSet("db", 5, unready, parallel, func(s *appsv1beta1.StatefulSet) {
		s.Spec.ScaleStrategy = &appsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: &two}
	}))
	h.waitPods("db", "two pods", func(ps []corev1.Pod) bool { return len(ps) == 2 })
	testenv.Consistently(t, 3*time.Second, func() error {
		if ps := h.pods("db"); len(ps) != 2 {
			return fmt.Errorf("more than maxUnavailable unavailable pods: %v", names(ps))
		}
		return nil
	})
	for _, p := range h.pods("db") {
		h.patchPod(p.Name, `{"metadata":{"annotations":{"sim.kwok.x-k8s.io/unready-containers":null}}}`)
	}
	pods := h.waitPods("db", "two more once the first are available", func(ps []corev1.Pod) bool { return len(ps) == 4 })
	assert.Equal(t, []string{"db-0", "db-1", "db-2", "db-3"}, names(pods))
}

// TestReserveOrdinalsAndStartOrdinal: reserved ordinals are skipped (the
// replicas move up), ordinals.start shifts the first ordinal (gate
// StatefulSetStartOrdinal), and reserving an ordinal later deletes its pod.
func TestReserveOrdinalsAndStartOrdinal(t *testing.T) {
	h := newHarness(t)
	h.gates[features.StatefulSetStartOrdinal] = true
	h.startController()
	h.create(newSet("rs", 3, parallel, func(s *appsv1beta1.StatefulSet) {
		s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1)}
	}))
	h.create(newSet("so", 3, parallel, func(s *appsv1beta1.StatefulSet) {
		s.Spec.Ordinals = &appsv1beta1.StatefulSetOrdinals{Start: 2}
		s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString("3-4")}
	}))
	h.waitPods("rs", "ordinal 1 reserved", readyNames("rs-0", "rs-2", "rs-3"))
	h.waitPods("so", "start 2, 3-4 reserved", readyNames("so-2", "so-5", "so-6"))

	h.modify("rs", func(s *appsv1beta1.StatefulSet) {
		s.Spec.ReserveOrdinals = append(s.Spec.ReserveOrdinals, intstr.FromInt32(2))
	})
	h.waitPods("rs", "ordinal 2 reserved too", readyNames("rs-0", "rs-3", "rs-4"))
	h.waitStatus("rs", "settled", settled(3))
}
