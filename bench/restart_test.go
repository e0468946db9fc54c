package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Scenario 2 (+4): S CloneSets × P converged pods; the cloneset-controller is
// restarted and measured until its queue has gone quiet: time, syncs per
// CloneSet, API writes (target: none), peak RSS, CPU. Then, with no change,
// its idle cost over a window. The same with the replay of initial-list pods
// turned on (--disable-initial-list-delay), and the baseline:
// kube-controller-manager restarted over S Deployments × P pods (its
// ReplicaSet queue), and its idle cost.
func TestRestartAndIdle(t *testing.T) {
	b := newBench(t)
	sets, per := b.s.restartSets, b.s.restartPodsPerSet
	ctx := context.Background()

	ns := b.env.Namespace(t)
	w := watchPods(t, b.env, ns, "bench=restart")
	first := b.startCloneSetController(ns)
	for i := range sets {
		labels := map[string]string{"bench": "restart", "set": fmt.Sprint(i)}
		_, err := b.client.AppsV1alpha1().CloneSets(ns).Create(ctx, newCloneSet(fmt.Sprintf("set-%d", i), per, labels, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType), metav1.CreateOptions{})
		mustNoErr(t, err, "create CloneSet")
	}
	w.waitReady(t, sets*per, imageV1, b.s.waitBudget)
	testenv.Eventually(t, b.s.waitBudget, func() (bool, error) {
		list, err := b.client.AppsV1alpha1().CloneSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, cs := range list.Items {
			st := cs.Status
			if st.ObservedGeneration != cs.Generation || int(st.AvailableReplicas) != per || st.CurrentRevision != st.UpdateRevision {
				return false, nil
			}
		}
		return len(list.Items) == sets, nil
	})
	first.Stop(t)

	restartOurs := func(subject string, extra ...string) row {
		from := b.audit.mark()
		start := time.Now()
		p := b.startCloneSetController(ns, extra...)
		took, syncs := quiet(t, scrapeProcess(p), "cloneset", sets, start, b.s.quietFor, b.s.waitBudget)
		rss, cpu, err := procStats(p.PID())
		mustNoErr(t, err, "proc stats")
		reqs, writes := b.audit.count(from, isCloneSet)
		r := row{scenario: "restart", subject: subject, wall: took, requests: reqs, writes: writes, rssMiB: rss, cpuSec: cpu,
			note: fmt.Sprintf("%.2f syncs per CloneSet", float64(syncs)/float64(sets))}
		if subject == "cloneset-controller" {
			idle := b.idle(p.PID(), isCloneSet)
			idle.subject = "cloneset-controller"
			record(idle)
		}
		p.Stop(t)
		return r
	}
	ours := restartOurs("cloneset-controller")
	replay := restartOurs("cloneset-controller, --disable-initial-list-delay", "--disable-initial-list-delay")
	b.cleanup(ns)

	// Baseline: the same converged state as Deployments under kube-controller-manager.
	ns2 := b.env.Namespace(t)
	w2 := watchPods(t, b.env, ns2, "bench=restart")
	for i := range sets {
		labels := map[string]string{"bench": "restart", "set": fmt.Sprint(i)}
		_, err := b.env.Kube.AppsV1().Deployments(ns2).Create(ctx, newDeployment(fmt.Sprintf("set-%d", i), per, labels), metav1.CreateOptions{})
		mustNoErr(t, err, "create Deployment")
	}
	w2.waitReady(t, sets*per, imageV1, b.s.waitBudget)
	testenv.Eventually(t, b.s.waitBudget, func() (bool, error) {
		list, err := b.env.Kube.AppsV1().Deployments(ns2).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, d := range list.Items {
			if d.Status.ObservedGeneration != d.Generation || int(d.Status.AvailableReplicas) != per {
				return false, nil
			}
		}
		return len(list.Items) == sets, nil
	})
	from := b.audit.mark()
	start := time.Now()
	pid, port := restartKCM(t, b.env)
	// Every namespace's ReplicaSets are synced at start; ours are sets of them.
	took, syncs := quiet(t, scrapeKCM(t, b.env, port), "replicaset", sets, start, b.s.quietFor, b.s.waitBudget)
	rss, cpu, err := procStats(pid)
	mustNoErr(t, err, "proc stats")
	reqs, writes := b.audit.count(from, isKCM)
	kcm := row{scenario: "restart", subject: "kube-controller-manager", wall: took, requests: reqs, writes: writes, rssMiB: rss, cpuSec: cpu,
		ratio: "baseline", note: fmt.Sprintf("ReplicaSet queue: %d syncs (all namespaces); RSS/CPU/requests: all its controllers", syncs)}
	idle := b.idle(pid, isKCM)
	idle.subject, idle.ratio = "kube-controller-manager", "baseline"
	record(idle)
	b.cleanup(ns2)

	ours.ratio = fmt.Sprintf("%.2f× kcm", ratio(ours.wall, kcm.wall))
	replay.ratio = fmt.Sprintf("%.2f× kcm", ratio(replay.wall, kcm.wall))
	for _, r := range []row{ours, replay, kcm} {
		record(r)
		t.Logf("%s: quiet after %.2f s, %d writes, %.0f MiB, %s", r.subject, r.wall.Seconds(), r.writes, r.rssMiB, r.note)
	}
	if ours.requests != nil && ours.writes != 0 {
		t.Errorf("cloneset-controller wrote %d times restarting over converged CloneSets (target 0): %s", ours.writes, formatRequests(ours.requests))
	}
}

// idle measures a process's CPU time and API requests over the idle window.
func (b *bench) idle(pid int, match func(string, string) bool) row {
	from := b.audit.mark()
	_, cpu0, err := procStats(pid)
	mustNoErr(b.t, err, "proc stats")
	time.Sleep(b.s.idle) // the measurement window itself, not a synchronisation
	rss, cpu1, err := procStats(pid)
	mustNoErr(b.t, err, "proc stats")
	reqs, writes := b.audit.count(from, match)
	cpu := cpu1 - cpu0
	return row{scenario: "idle", requests: reqs, writes: writes, rssMiB: rss, cpuSec: cpu,
		note: fmt.Sprintf("%.4f CPU-s per s over %s", cpu/b.s.idle.Seconds(), b.s.idle)}
}
