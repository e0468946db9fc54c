package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const rdUser = "system:serviceaccount:flotilla-system:resourcedistribution-controller"

func isResourceDistribution(user, _ string) bool { return user == rdUser }

// Scenario (issue 30, scale): the resourcedistribution-controller binary and one ResourceDistribution of a
// ConfigMap selecting N namespaces by label. Three measurements, each from its action until every copy shows it
// and the controller's queue has been quiet: the first distribution (N creates), one update of the source (N
// updates: every copy changed), and one more namespace labelled (1 create, no other copy written). The writes
// are the controller's requests in the audit log, by verb and resource.
func TestResourceDistribution(t *testing.T) {
	b := newBench(t)
	n := b.s.rdNamespaces
	id := "bench-rd-" + rand.String(5)
	label := map[string]string{"bench-rd": id}
	nss := make([]string, n+1)
	for i := range nss {
		nss[i] = fmt.Sprintf("%s-%04d", id, i)
	}
	b.createNamespaces(nss[:n], label)
	p := b.startController("resourcedistribution", "", "--feature-gates=ResourceDistributionGate=true")
	pid := p.PID()

	source := func(version string) runtime.RawExtension {
		raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "bench-config"},
			"data": map[string]any{"version": version}})
		mustNoErr(t, err, "marshal source")
		return runtime.RawExtension{Raw: raw}
	}
	rds := b.client.AppsV1alpha1().ResourceDistributions()
	t.Cleanup(func() { _ = rds.Delete(context.Background(), id, metav1.DeleteOptions{}) })

	phase := func(subject string, act func(), want map[string]string) row {
		from := b.audit.mark()
		_, cpu0, _ := procStats(pid)
		start := time.Now()
		act()
		done := b.waitCopies(want)
		wall := done.Sub(start)
		quiet(t, scrapeProcess(p), "resourcedistribution", 1, start, b.s.quietFor, b.s.waitBudget)
		rss, cpu1, _ := procStats(pid)
		reqs, writes := b.audit.count(from, isResourceDistribution)
		byRes := b.audit.byResource(from, isResourceDistribution)
		t.Logf("%s: requests by verb and resource: %v", subject, byRes)
		r := row{scenario: "resource distribution", subject: subject, wall: wall, requests: reqs, writes: writes, rssMiB: rss,
			cpuSec: cpu1 - cpu0, note: fmt.Sprintf("%d copies; writes by resource: %s", len(want), writesByResource(byRes))}
		record(r)
		return r
	}
	all := func(nss []string, version string) map[string]string {
		out := map[string]string{}
		for _, ns := range nss {
			out[ns] = version
		}
		return out
	}

	phase(fmt.Sprintf("first distribution to %d namespaces", n), func() {
		_, err := rds.Create(context.Background(), &appsv1alpha1.ResourceDistribution{
			ObjectMeta: metav1.ObjectMeta{Name: id},
			Spec: appsv1alpha1.ResourceDistributionSpec{Resource: source("v1"),
				Targets: appsv1alpha1.ResourceDistributionTargets{NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: label}}},
		}, metav1.CreateOptions{})
		mustNoErr(t, err, "create ResourceDistribution")
	}, all(nss[:n], "v1"))

	before := b.audit.mark()
	phase(fmt.Sprintf("one source update reaches %d copies", n), func() {
		rd, err := rds.Get(context.Background(), id, metav1.GetOptions{})
		mustNoErr(t, err, "get ResourceDistribution")
		rd.Spec.Resource = source("v2")
		_, err = rds.Update(context.Background(), rd, metav1.UpdateOptions{})
		mustNoErr(t, err, "update ResourceDistribution")
	}, all(nss[:n], "v2"))
	if got := b.audit.byResource(before, isResourceDistribution)["update configmaps"]; b.audit != nil && got != n {
		t.Errorf("source update: %d configmap updates, want %d (one per copy)", got, n)
	}

	before = b.audit.mark()
	phase("one namespace added", func() { b.createNamespaces(nss[n:], label) }, all(nss, "v2"))
	if byRes := b.audit.byResource(before, isResourceDistribution); b.audit != nil &&
		(byRes["create configmaps"] != 1 || byRes["update configmaps"] != 0 || byRes["delete configmaps"] != 0) {
		t.Errorf("one namespace added: %v, want exactly one configmap create", byRes)
	}
}

// createNamespaces creates the namespaces (32 at a time) and deletes them when the test ends.
func (b *bench) createNamespaces(names []string, labels map[string]string) {
	b.t.Helper()
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := b.env.Kube.CoreV1().Namespaces().Create(context.Background(),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		b.t.Fatalf("create namespaces: %v (and %d more)", errs[0], len(errs)-1)
	}
	b.t.Cleanup(func() {
		for _, name := range names {
			if err := b.env.Kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				b.t.Logf("delete namespace %s: %v", name, err)
			}
		}
	})
}

// waitCopies polls (one list of the copies across the cluster) until each namespace of want holds the copy
// bench-config with data.version as wanted, and returns when it first saw that.
func (b *bench) waitCopies(want map[string]string) time.Time {
	b.t.Helper()
	testenv.Eventually(b.t, b.s.waitBudget, func() (bool, error) {
		list, err := b.env.Kube.CoreV1().ConfigMaps(metav1.NamespaceAll).List(context.Background(),
			metav1.ListOptions{FieldSelector: "metadata.name=bench-config"})
		if err != nil {
			return false, err
		}
		ok := 0
		for _, cm := range list.Items {
			if v, in := want[cm.Namespace]; in && cm.Data["version"] == v {
				ok++
			}
		}
		if ok < len(want) {
			return false, fmt.Errorf("%d of %d copies as wanted", ok, len(want))
		}
		return true, nil
	})
	return time.Now()
}

// writesByResource lists the write requests of a byResource map, e.g. "update configmaps 1000, update
// resourcedistributions/status 2".
func writesByResource(m map[string]int) string {
	out := ""
	for _, verb := range []string{"create", "update", "patch", "delete"} {
		for _, res := range []string{"configmaps", "resourcedistributions/status", "events"} {
			if c := m[verb+" "+res]; c > 0 {
				if out != "" {
					out += ", "
				}
				out += fmt.Sprintf("%s %s %d", verb, res, c)
			}
		}
	}
	if out == "" {
		return "none"
	}
	return out
}
