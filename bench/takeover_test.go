package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv/openkruise"
)

// Scenario (issue 23): S CloneSets × P pods exactly as OpenKruise v1.9's
// kruise-manager leaves them converged (its ControllerRevisions, pod labels,
// readiness gates and conditions, status), written by the bench process;
// then cloneset-controller starts and is measured until its queue has gone
// quiet: time, API requests, and what it wrote to pods and revisions (target:
// nothing). Before issue 23 the same takeover recreated every pod.
func TestTakeover(t *testing.T) {
	b := newBench(t)
	sets, per := b.s.restartSets, b.s.restartPodsPerSet
	ctx := context.Background()
	ns := b.env.Namespace(t)
	w := watchPods(t, b.env, ns, "bench=takeover")

	cfg := rest.CopyConfig(b.env.Config)
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(*flagQPS), *flagBurst, rawUserAgent
	kube, err := kubernetes.NewForConfig(cfg)
	mustNoErr(t, err, "raw client")
	var pods []*corev1.Pod
	for i := range sets {
		labels := map[string]string{"bench": "takeover", "set": fmt.Sprint(i)}
		cs, err := b.client.AppsV1alpha1().CloneSets(ns).Create(ctx, newCloneSet(fmt.Sprintf("set-%d", i), per, labels, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType), metav1.CreateOptions{})
		mustNoErr(t, err, "create CloneSet")
		rev, err := kube.AppsV1().ControllerRevisions(ns).Create(ctx, openkruise.CloneSetRevision(t, cs, 1, false), metav1.CreateOptions{})
		mustNoErr(t, err, "create revision")
		for j := range per {
			pods = append(pods, openkruise.CloneSetPod(cs, rev, imageV1, fmt.Sprintf("k%04d", j), ""))
		}
	}
	// OpenKruise's inplaceupdate Refresh and podreadiness controller set
	// InPlaceUpdateReady and KruisePodReady True on every pod.
	now := time.Now().UTC().Format(time.RFC3339)
	conds := []byte(openkruise.ReadyConditions(now))
	parallelDo(t, len(pods), func(i int) error {
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, pods[i], metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := kube.CoreV1().Pods(ns).Patch(ctx, pods[i].Name, types.StrategicMergePatchType, conds, metav1.PatchOptions{}, "status")
		return err
	})
	w.waitReady(t, sets*per, imageV1, b.s.waitBudget)
	for i := range sets {
		name := fmt.Sprintf("set-%d", i)
		cs, err := b.client.AppsV1alpha1().CloneSets(ns).Get(ctx, name, metav1.GetOptions{})
		mustNoErr(t, err, "get CloneSet")
		revName := pods[i*per].Labels[pub.ControllerRevisionHashLabelKey]
		n := int32(per)
		cs.Status = appsv1alpha1.CloneSetStatus{ObservedGeneration: cs.Generation, Replicas: n, ReadyReplicas: n, AvailableReplicas: n,
			UpdatedReplicas: n, UpdatedReadyReplicas: n, UpdatedAvailableReplicas: n, ExpectedUpdatedReplicas: n,
			UpdateRevision: revName, CurrentRevision: revName, CollisionCount: ptr.To[int32](0),
			LabelSelector: fmt.Sprintf("bench=takeover,set=%d", i)}
		_, err = b.client.AppsV1alpha1().CloneSets(ns).UpdateStatus(ctx, cs, metav1.UpdateOptions{})
		mustNoErr(t, err, "write OpenKruise's status")
	}
	uidsBefore := podUIDs(t, kube, ns)
	revsBefore, err := kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	mustNoErr(t, err, "list revisions")

	from := b.audit.mark()
	start := time.Now()
	p := b.startCloneSetController(ns)
	took, syncs := quiet(t, scrapeProcess(p), "cloneset", sets, start, b.s.quietFor, b.s.waitBudget)
	rss, cpu, err := procStats(p.PID())
	mustNoErr(t, err, "proc stats")
	reqs, writes := b.audit.count(from, isCloneSet)
	byResource := b.audit.writesByResource(from, isCloneSet)
	p.Stop(t)

	uidsAfter := podUIDs(t, kube, ns)
	replaced := 0
	for name, uid := range uidsBefore {
		if uidsAfter[name] != uid {
			replaced++
		}
	}
	revsAfter, err := kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	mustNoErr(t, err, "list revisions")
	r := row{scenario: "takeover", subject: "cloneset-controller over OpenKruise v1.9's state", wall: took, requests: reqs, writes: writes,
		rssMiB: rss, cpuSec: cpu, note: fmt.Sprintf("%d × %d pods; %.2f syncs per CloneSet; pods replaced %d; revisions %d → %d; writes by resource: %s",
			sets, per, float64(syncs)/float64(sets), replaced, len(revsBefore.Items), len(revsAfter.Items), formatRequests(byResource))}
	record(r)
	t.Logf("takeover: quiet after %.2f s, %d writes (%s), %d pods replaced", took.Seconds(), writes, formatRequests(byResource), replaced)
	if replaced != 0 || len(revsAfter.Items) != len(revsBefore.Items) {
		t.Errorf("takeover replaced %d pods, revisions %d → %d (target: none)", replaced, len(revsBefore.Items), len(revsAfter.Items))
	}
	for k, n := range byResource {
		if k != "update clonesets/status" && n > 0 { // Flotilla's Progressing condition: one status write per CloneSet
			t.Errorf("takeover wrote %s %d times (target: 0)", k, n)
		}
	}
	b.cleanup(ns)
}

// parallelDo runs fn(0..n-1) on -bench.concurrency goroutines.
func parallelDo(t *testing.T, n int, fn func(i int) error) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range *flagConcurrency {
		wg.Go(func() {
			for i := range jobs {
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	mustNoErr(t, first, "parallel writes")
}

func podUIDs(t *testing.T, kube kubernetes.Interface, ns string) map[string]types.UID {
	list, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "bench=takeover"})
	mustNoErr(t, err, "list pods")
	out := map[string]types.UID{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.UID
		}
	}
	return out
}

// writesByResource counts the matching identity's writes since from by
// "verb resource[/subresource]".
func (a *audit) writesByResource(from int64, match func(user, agent string) bool) map[string]int {
	if a == nil {
		return nil
	}
	out := map[string]int{}
	a.scan(from, func(r io.Reader) {
		eachRequest(r, match, func(e auditEvent) {
			if !writeVerbs[e.Verb] {
				return
			}
			k := e.Verb + " " + e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				k += "/" + e.ObjectRef.Subresource
			}
			out[k]++
		})
	})
	return out
}
