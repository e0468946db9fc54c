package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// The WorkloadSpread webhook configurations, as in
// deploy/components/workloadspread/webhook.yaml.
const workloadSpreadConfig = "flotilla-workloadspread"

// Issue 29: pod admission with a WorkloadSpread. The built
// workloadspread-controller (webhook by URL on 127.0.0.1) with one
// WorkloadSpread on a CloneSet of namespace "matched" (subset "half" at most
// N/2, subset "rest" unlimited; no CloneSet controller runs: the bench
// creates the pods, owned by the CloneSet). N pods owned by another
// CloneSet of another namespace cause no webhook call; N pods of the target
// are each placed with one call and one status write, and exactly N/2 get
// "half" (the creates run 64 at a time). Create latency p50/p99 side by side.
func TestWorkloadSpreadAdmission(t *testing.T) {
	b := newBench(t)
	n := b.s.admissionPods
	matched, other := b.env.Namespace(t), b.env.Namespace(t)
	port := freeLocalPort(t)
	p := b.startController("workloadspread", matched, "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port))
	b.pointMutatingAt(workloadSpreadConfig, port)
	b.pointValidatingAt(workloadSpreadConfig, port)

	labels := map[string]string{"app": "bench-ws"}
	owner := func(ns string) func(*corev1.Pod) {
		cs, err := b.client.AppsV1alpha1().CloneSets(ns).Create(context.Background(), &appsv1alpha1.CloneSet{
			ObjectMeta: metav1.ObjectMeta{Name: "bench-ws"},
			Spec: appsv1alpha1.CloneSetSpec{Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: template(labels, imageV1)}}, metav1.CreateOptions{})
		mustNoErr(t, err, "create CloneSet")
		ref := *metav1.NewControllerRef(cs, appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet"))
		return func(pod *corev1.Pod) { pod.OwnerReferences = []metav1.OwnerReference{ref} }
	}
	ownedMatched, ownedOther := owner(matched), owner(other)
	half := intstr.FromInt32(int32(n / 2))
	ws := &appsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: appsv1alpha1.WorkloadSpreadSpec{
		TargetReference: &appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "bench-ws"},
		Subsets:         []appsv1alpha1.WorkloadSpreadSubset{{Name: "half", MaxReplicas: &half}, {Name: "rest"}}}}
	_, err := b.client.AppsV1alpha1().WorkloadSpreads(matched).Create(context.Background(), ws, metav1.CreateOptions{})
	mustNoErr(t, err, "create WorkloadSpread")
	b.waitPlacing(matched, labels, ownedMatched)

	calls := func() float64 {
		body, err := scrapeProcess(p)()
		mustNoErr(t, err, "scrape workloadspread-controller")
		total := 0.0
		for _, r := range []string{"allowed", "denied", "error"} {
			total += metricValue(body, "webhook_requests_total", `result="`+r+`",webhook="workloadspread-mutate-pod"`)
		}
		return total
	}
	for _, c := range []struct {
		subject, ns string
		own         func(*corev1.Pod)
	}{{"pods of a workload no WorkloadSpread targets", other, ownedOther}, {"pods of the WorkloadSpread's workload", matched, ownedMatched}} {
		before := calls()
		lat, wall := b.createTimed(c.ns, n, labels, c.own)
		got := calls() - before
		record(row{scenario: "pod admission (WorkloadSpread)", subject: c.subject, wall: wall,
			note: fmt.Sprintf("%d pods; create latency p50 %s, p99 %s; webhook calls %.0f", n, pct(lat, 50), pct(lat, 99), got)})
		if c.ns == other && got != 0 {
			t.Errorf("%d webhook calls for pods no WorkloadSpread concerns, want 0", int(got))
		}
		if c.ns == matched && int(got) != n {
			t.Errorf("%d webhook calls for %d pods of the target", int(got), n)
		}
	}
	pods, err := b.env.Kube.CoreV1().Pods(matched).List(context.Background(), metav1.ListOptions{})
	mustNoErr(t, err, "list pods")
	count := map[string]int{}
	for _, pod := range pods.Items {
		s := pod.Annotations["apps.kruise.io/matched-workloadspread"]
		count[s[strings.LastIndex(s, `"subset":`)+1:]]++
	}
	if count[`subset":"half"}`] != n/2 || count[`subset":"rest"}`] != n-n/2 {
		t.Errorf("placement %v, want %d in half and %d in rest", count, n/2, n-n/2)
	}
}

// pointMutatingAt moves every webhook of the named mutating configuration
// to port (retried on conflict: the controller writes caBundle and scope).
func (b *bench) pointMutatingAt(name string, port int) {
	ctx := context.Background()
	api := b.env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range m.Webhooks {
			m.Webhooks[i].ClientConfig.URL = atPort(b.t, m.Webhooks[i].ClientConfig.URL, port)
		}
		_, err = api.Update(ctx, m, metav1.UpdateOptions{})
		return err
	})
	mustNoErr(b.t, err, "point mutating configuration "+name+" at the bench's webhook")
}

// waitPlacing waits until a dry-run pod of the target gets its subset
// annotation: the scope names the workload and the API server calls the
// webhook with a caBundle it trusts (failurePolicy Ignore locally: until
// then pods would be created unplaced). A dry run writes no status.
func (b *bench) waitPlacing(ns string, labels map[string]string, own func(*corev1.Pod)) {
	b.t.Helper()
	testenv.Eventually(b.t, time.Minute, func() (bool, error) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe-placement", Namespace: ns}, Spec: template(labels, imageV1).Spec}
		pod.Labels = labels
		own(pod)
		out, err := b.env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return out.Annotations["apps.kruise.io/matched-workloadspread"] != "", nil
	})
}
