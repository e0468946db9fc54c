package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const pubConfig = "flotilla-pub"

// Scenario 8 (issue 12, scale): the pub-controller binary (guard served as
// in `make run`, by URL on 127.0.0.1) with one PodUnavailableBudget over N
// Ready pods allowing half of D; D deletes fired at once at its pods: the
// deletes' latency p50/p99 as the client sees it, the guard's own mean
// (webhook_request_duration_seconds), exactly D/2 admitted. The same D
// deletes in a namespace without a budget: latency, and zero webhook calls.
func TestPubGuard(t *testing.T) {
	b := newBench(t)
	n, d := b.s.pubPods, b.s.pubDeletes
	protected, free := b.env.Namespace(t), b.env.Namespace(t)
	port := freeLocalPort(t)
	p := b.startController("pub", protected, "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port))
	b.pointValidatingAt(pubConfig, port)

	labels := map[string]string{"bench": "pub"}
	for _, ns := range []string{protected, free} {
		w := watchPods(t, b.env, ns, "bench=pub")
		b.createRaw(ns, n, labels)
		w.waitReady(t, n, imageV1, b.s.waitBudget)
	}
	maxUnavailable := intstr.FromInt32(int32(d / 2))
	_, err := b.client.PolicyV1alpha1().PodUnavailableBudgets(protected).Create(context.Background(), &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Annotations: map[string]string{"pub.kruise.io/protect-total-replicas": fmt.Sprint(n)}},
		Spec:       policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, MaxUnavailable: &maxUnavailable},
	}, metav1.CreateOptions{})
	mustNoErr(t, err, "create PodUnavailableBudget")
	testenv.Eventually(t, b.s.waitBudget, func() (bool, error) {
		pub, err := b.client.PolicyV1alpha1().PodUnavailableBudgets(protected).Get(context.Background(), "bench", metav1.GetOptions{})
		if err != nil || pub.Status.CurrentAvailable != int32(n) {
			return false, err
		}
		pods, err := b.env.Kube.CoreV1().Pods(protected).List(context.Background(), metav1.ListOptions{})
		for _, pod := range pods.Items {
			if pod.Annotations["kruise.io/related-pub"] == "" {
				return false, err
			}
		}
		return strings.Contains(b.pubScope(), protected), err
	})

	scrape := func() (calls, seconds float64) {
		body, err := scrapeProcess(p)()
		mustNoErr(t, err, "scrape pub-controller")
		for _, r := range []string{"allowed", "denied", "error"} {
			calls += metricValue(body, "webhook_requests_total", `result="`+r+`",webhook="pub-validate-pod"`)
		}
		return calls, metricValue(body, "webhook_request_duration_seconds_sum", `webhook="pub-validate-pod"`)
	}
	for _, c := range []struct{ subject, ns string }{{"pods no budget covers", free}, {"pods a budget protects", protected}} {
		calls0, sec0 := scrape()
		lat, ok, wall := b.deleteTimed(c.ns, d)
		calls1, sec1 := scrape()
		calls := calls1 - calls0
		note := fmt.Sprintf("%d Ready pods, %d concurrent deletes, %d admitted; delete latency p50 %s, p99 %s; webhook calls %.0f",
			n, d, ok, pct(lat, 50), pct(lat, 99), calls)
		if calls > 0 {
			note += fmt.Sprintf(", guard mean %s", time.Duration((sec1-sec0)/calls*float64(time.Second)).Round(10*time.Microsecond))
		}
		record(row{scenario: "pub guard", subject: c.subject, wall: wall, note: note})
		if c.ns == free && (calls != 0 || ok != d) {
			t.Errorf("no budget: %.0f webhook calls (want 0), %d of %d deletes admitted", calls, ok, d)
		}
		if c.ns == protected && ok != d/2 {
			t.Errorf("budget of %d: %d of %d deletes admitted", d/2, ok, d)
		}
	}
}

func (b *bench) pubScope() string {
	v, err := b.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), pubConfig, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return v.Webhooks[0].MatchConditions[0].Expression
}

// deleteTimed deletes raw-0 … raw-(d-1) all at once and returns each
// admitted delete's latency, how many were admitted and the wall time.
func (b *bench) deleteTimed(ns string, d int) ([]time.Duration, int, time.Duration) {
	cfg := rest.CopyConfig(b.env.Config)
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(*flagQPS), *flagBurst, rawUserAgent
	kube, err := kubernetes.NewForConfig(cfg)
	mustNoErr(b.t, err, "raw client")
	var mu sync.Mutex
	var lat []time.Duration
	ok := 0
	var wg sync.WaitGroup
	start := time.Now()
	for i := range d {
		wg.Go(func() {
			t0 := time.Now()
			err := kube.CoreV1().Pods(ns).Delete(context.Background(), fmt.Sprintf("raw-%d", i), metav1.DeleteOptions{})
			dt := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, dt)
			if err == nil {
				ok++
			}
		})
	}
	wg.Wait()
	return lat, ok, time.Since(start)
}
