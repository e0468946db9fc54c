package bench

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// The SidecarSet webhook entry and its scope condition, as in
// deploy/components/sidecarset/webhook.yaml.
const (
	sidecarSetConfig = "flotilla-sidecarset"
	scopeCondition   = "flotilla-sidecarset-selectors"
)

// Scenario 6 (issue 11 §4, pod-creation part): the sidecarset-controller
// binary (webhook served as in `make run`, by URL on 127.0.0.1) with one
// SidecarSet scoped to namespace "matched". N pods created in another
// namespace, labelled so the SidecarSet's selector would match them, cause
// no webhook call (the process's webhook_requests_total does not move);
// N pods in "matched" are each injected, with one call each. Creation latency
// p50/p99 is measured by the creating client, for both, side by side.
func TestPodAdmission(t *testing.T) {
	b := newBench(t)
	n := b.s.admissionPods
	matched, other := b.env.Namespace(t), b.env.Namespace(t)
	port := freeLocalPort(t)
	p := b.startController("sidecarset", matched, "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port))
	b.pointWebhooksAt(port)

	labels := map[string]string{"app": "bench-sidecar"}
	set := &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-" + matched},
		Spec: appsv1alpha1.SidecarSetSpec{
			Namespace:  matched,
			Selector:   &metav1.LabelSelector{MatchLabels: labels},
			Containers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "sidecar", Image: imageV1}}},
		},
	}
	_, err := b.client.AppsV1alpha1().SidecarSets().Create(context.Background(), set, metav1.CreateOptions{})
	mustNoErr(t, err, "create SidecarSet")
	t.Cleanup(func() {
		_ = b.client.AppsV1alpha1().SidecarSets().Delete(context.Background(), set.Name, metav1.DeleteOptions{})
	})
	b.waitInjecting(matched, labels)

	calls := func() float64 {
		body, err := scrapeProcess(p)()
		mustNoErr(t, err, "scrape sidecarset-controller")
		total := 0.0
		for _, r := range []string{"allowed", "denied", "error"} {
			total += metricValue(body, "webhook_requests_total", `result="`+r+`",webhook="sidecarset-inject-pod"`)
		}
		return total
	}
	for _, c := range []struct{ subject, ns string }{{"pods no SidecarSet selects", other}, {"pods a SidecarSet selects", matched}} {
		before := calls()
		lat, wall := b.createTimed(c.ns, n, labels)
		got := calls() - before
		record(row{scenario: "pod admission", subject: c.subject, wall: wall,
			note: fmt.Sprintf("%d pods; create latency p50 %s, p99 %s; webhook calls %.0f", n, pct(lat, 50), pct(lat, 99), got)})
		if c.ns == other && got != 0 {
			t.Errorf("%d webhook calls for pods no SidecarSet selects, want 0", int(got))
		}
		if c.ns == matched && int(got) != n {
			t.Errorf("%d webhook calls for %d selected pods", int(got), n)
		}
	}
	pods, err := b.env.Kube.CoreV1().Pods(matched).List(context.Background(), metav1.ListOptions{})
	mustNoErr(t, err, "list pods")
	for _, pod := range pods.Items {
		if len(pod.Spec.Containers) != 2 {
			t.Fatalf("pod %s was not injected: %v", pod.Name, pod.Spec.Containers)
		}
	}
}

func freeLocalPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	mustNoErr(t, err, "free port")
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// pointWebhooksAt moves the local overlay's webhook URLs (127.0.0.1:19443)
// to the bench process's port: a private cluster, but another `make run`
// on this host may hold 19443.
func (b *bench) pointWebhooksAt(port int) {
	ctx := context.Background()
	api := b.env.Kube.AdmissionregistrationV1()
	// The controller writes the caBundle into both configurations meanwhile.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m, err := api.MutatingWebhookConfigurations().Get(ctx, sidecarSetConfig, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range m.Webhooks {
			m.Webhooks[i].ClientConfig.URL = atPort(b.t, m.Webhooks[i].ClientConfig.URL, port)
		}
		_, err = api.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{})
		return err
	})
	mustNoErr(b.t, err, "point the mutating configuration at the bench's webhook")
	b.pointValidatingAt(sidecarSetConfig, port)
}

// pointValidatingAt moves every webhook of the named validating
// configuration to port. Its controller writes the caBundle (and the
// scope) into it meanwhile, so the edit is retried on conflict.
func (b *bench) pointValidatingAt(name string, port int) {
	ctx := context.Background()
	api := b.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		v, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range v.Webhooks {
			v.Webhooks[i].ClientConfig.URL = atPort(b.t, v.Webhooks[i].ClientConfig.URL, port)
		}
		_, err = api.Update(ctx, v, metav1.UpdateOptions{})
		return err
	})
	mustNoErr(b.t, err, "point validating configuration "+name+" at the bench's webhook")
}

// atPort returns the webhook URL with its port replaced: the local
// overlay's 19443 (19444 for PUB), or the port an earlier scenario of the same run set.
func atPort(t *testing.T, raw *string, port int) *string {
	u, err := url.Parse(*raw)
	mustNoErr(t, err, "webhook URL")
	u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(port))
	return ptr.To(u.String())
}

// waitInjecting waits until a pod created in ns with labels is injected:
// the scope condition names ns and the API server calls the webhook with a
// caBundle it trusts. Until then (the configuration reaches the API
// server's webhook cache a moment after it is written) pods would be
// created without the sidecar, as the local overlay's failurePolicy is
// Ignore. A server-side dry run reaches the webhook (sideEffects None) and
// creates nothing.
func (b *bench) waitInjecting(ns string, labels map[string]string) {
	b.t.Helper()
	testenv.Eventually(b.t, time.Minute, func() (bool, error) {
		if !strings.Contains(b.scope(), ns) {
			return false, nil
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe-injection", Namespace: ns}, Spec: template(labels, imageV1).Spec}
		pod.Labels = labels
		out, err := b.env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return len(out.Spec.Containers) > 1, nil
	})
}

func (b *bench) scope() string {
	m, err := b.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), sidecarSetConfig, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, c := range m.Webhooks[0].MatchConditions {
		if c.Name == scopeCondition {
			return c.Expression
		}
	}
	return ""
}

// createTimed creates n unschedulable pods (admission only: no scheduler or
// kubelet work in the measurement) with the raw client's concurrency and
// returns each create's latency and the wall time; mutate (e.g. an owner)
// applies to each pod before it is created.
func (b *bench) createTimed(ns string, n int, labels map[string]string, mutate ...func(*corev1.Pod)) ([]time.Duration, time.Duration) {
	cfg := rest.CopyConfig(b.env.Config)
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(*flagQPS), *flagBurst, rawUserAgent
	kube, err := kubernetes.NewForConfig(cfg)
	mustNoErr(b.t, err, "raw client")
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	start := time.Now()
	for range *flagConcurrency {
		wg.Go(func() {
			for i := range jobs {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("adm-%d", i), Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: imageV1}},
						NodeSelector: map[string]string{"flotilla.dev/bench": "no-such-node"}},
				}
				for _, m := range mutate {
					m(pod)
				}
				t0 := time.Now()
				_, err := kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
				d := time.Since(t0)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					continue
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	mustNoErr(b.t, firstErr, "create pods")
	return lat, time.Since(start)
}

// pct is the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "—"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(0, min(i, len(s)-1))].Round(100 * time.Microsecond).String()
}
