package integration

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/inplace/inplaceclient"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// createGatedPods creates pods with the InPlaceUpdateReady readiness gate,
// as Flotilla's workloads do, and sets the condition True.
func (h *harness) createGatedPods(app string, n int) {
	h.T.Helper()
	h.createPods(app, n, nil, func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	})
	ctx := context.Background()
	for _, p := range h.pods(app) {
		testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
			cur, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if inplace.Condition(cur) != nil {
				return true, nil
			}
			cur.Status.Conditions = append(cur.Status.Conditions, corev1.PodCondition{
				Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
			_, err = h.Env.Kube.CoreV1().Pods(h.NS).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err == nil, nil
		})
	}
	h.waitReady(app, n)
}

// Item 6: an in-place rollout driven by kit/inplace — the machinery
// Flotilla's CloneSet, Advanced StatefulSet and SidecarSet update pods
// with — over pods a budget protects, at the workload's own pace of "all
// at once": the guard admits the start of one update (InPlaceUpdateReady
// turning False) per unit of budget, refused pods stay Ready and
// untouched, availability never drops below desiredAvailable, and the
// rollout completes as pods come back.
func TestInPlaceRolloutRespectsBudget(t *testing.T) {
	h := newHarness(t)
	h.start()
	const n = 4
	h.createGatedPods("roll", n)
	h.pubs.Create(newPub("roll", "roll", "1", totalReplicas("4")))
	h.waitScoped()
	h.waitStatus("roll", "1 allowed", counts(1, n, n-1, n))
	h.waitMarked("roll")
	w := h.watchAvailability("roll")

	ctl := inplaceclient.New(h.Env.Kube, nil)
	req := inplaceclient.UpdateRequest{Revision: "roll-v2", Spec: inplace.Spec{ContainerImages: map[string]string{"main": imageV2}}}
	ctx := context.Background()
	var first atomic.Bool
	first.Store(true)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods := h.pods("roll")
		done := 0
		var mu sync.Mutex
		var started, refused int
		var wg sync.WaitGroup
		for i := range pods {
			p := &pods[i]
			state, _ := inplace.DecodeState(p)
			switch {
			case p.Spec.Containers[0].Image == imageV2 && state != nil && inplace.UpdateCompleted(p, state) && testenv.PodReady(p):
				done++
			case p.Spec.Containers[0].Image == imageV2:
				_, err := ctl.Refresh(ctx, p)
				if err != nil && !apierrors.IsConflict(err) {
					t.Logf("refresh %s: %v", p.Name, err)
				}
			default:
				wg.Go(func() {
					_, err := ctl.Update(ctx, p, req)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						started++
					case apierrors.IsForbidden(errors.Unwrap(err)) || apierrors.IsForbidden(err):
						t.Logf("refused %s: %v", p.Name, err)
						refused++
					default:
						t.Logf("update %s: %v", p.Name, err)
					}
				})
			}
		}
		wg.Wait()
		if first.Load() {
			first.Store(false)
			assert.Equal(t, 1, started, "one update starts per unit of budget")
			assert.Equal(t, n-1, refused, "the others are refused")
			for _, p := range h.pods("roll") {
				if p.Spec.Containers[0].Image == imageV1 {
					assert.True(t, testenv.PodReady(&p), "a refused pod stays Ready: %s", p.Name)
					assert.Nil(t, conditionFalse(&p), "a refused pod keeps InPlaceUpdateReady: %s", p.Name)
				}
			}
		}
		if done == n {
			break
		}
		require.True(t, time.Now().Before(deadline), "rollout did not complete")
		time.Sleep(200 * time.Millisecond) // the pace of a workload's resyncs, not a synchronisation
	}
	assert.GreaterOrEqual(t, w.Lowest(), n-1, "availability never below desiredAvailable")
	h.waitStatus("roll", "back to full", counts(1, n, n-1, n))
}

func conditionFalse(p *corev1.Pod) *corev1.PodCondition {
	c := inplace.Condition(p)
	if c != nil && c.Status == corev1.ConditionFalse {
		return c
	}
	return nil
}
