package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const sidecarSetUser = "system:serviceaccount:flotilla-system:sidecarset-controller"

func isSidecarSet(user, _ string) bool { return user == sidecarSetUser }

// Scenario 7 (issue 11 §4, upgrade part): N pods of a Deployment, each
// injected with a sidecar by the SidecarSet webhook; the SidecarSet's
// sidecar image changes (maxUnavailable 20%): time until every pod runs the
// new sidecar (spec and kubelet) and is Ready — in place, same pods —
// against a Deployment rolling update of the same size (maxUnavailable 20%,
// maxSurge 0), which recreates every pod.
func TestSidecarUpgrade(t *testing.T) {
	b := newBench(t)
	n := b.s.sidecarPods
	ctx := context.Background()
	labels := map[string]string{"bench": "sidecar"}

	ns := b.env.Namespace(t)
	port := freeLocalPort(t)
	b.startController("sidecarset", ns, "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port))
	b.pointWebhooksAt(port)
	set := &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-up-" + ns},
		Spec: appsv1alpha1.SidecarSetSpec{
			Namespace:  ns,
			Selector:   &metav1.LabelSelector{MatchLabels: labels},
			Containers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "sidecar", Image: imageV1}}},
			UpdateStrategy: appsv1alpha1.SidecarSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromString("20%")),
			},
		},
	}
	_, err := b.client.AppsV1alpha1().SidecarSets().Create(ctx, set, metav1.CreateOptions{})
	mustNoErr(t, err, "create SidecarSet")
	t.Cleanup(func() {
		_ = b.client.AppsV1alpha1().SidecarSets().Delete(context.Background(), set.Name, metav1.DeleteOptions{})
	})
	testenv.Eventually(t, time.Minute, func() (bool, error) { return strings.Contains(b.scope(), ns), nil })

	w := watchPods(t, b.env, ns, "bench=sidecar")
	_, err = b.env.Kube.AppsV1().Deployments(ns).Create(ctx, newDeployment("sidecar", n, labels), metav1.CreateOptions{})
	mustNoErr(t, err, "create Deployment")
	w.waitSidecar(t, n, imageV1, b.s.waitBudget)
	uids := w.uids()
	from := b.audit.mark()
	start := time.Now()
	_, err = b.client.AppsV1alpha1().SidecarSets().Patch(ctx, set.Name, types.MergePatchType,
		[]byte(fmt.Sprintf(`{"spec":{"containers":[{"name":"sidecar","image":%q}]}}`, imageV2)), metav1.PatchOptions{})
	mustNoErr(t, err, "patch SidecarSet")
	done := w.waitSidecar(t, n, imageV2, b.s.waitBudget)
	reqs, writes := b.audit.count(from, isSidecarSet)
	if after := w.uids(); len(after) != n || !sameKeys(uids, after) {
		t.Fatalf("pods were recreated: %d before, %d after", len(uids), len(after))
	}
	upgrade := row{scenario: "sidecar upgrade", subject: "SidecarSet in place (sidecar image)", wall: done.Sub(start), requests: reqs, writes: writes,
		note: fmt.Sprintf("%d pods, same UIDs", n)}
	b.cleanup(ns)

	dns := b.env.Namespace(t)
	dw := watchPods(t, b.env, dns, "bench=sidecar")
	_, err = b.env.Kube.AppsV1().Deployments(dns).Create(ctx, newDeployment("sidecar", n, labels), metav1.CreateOptions{})
	mustNoErr(t, err, "create Deployment")
	dw.waitReady(t, n, imageV1, b.s.waitBudget)
	from = b.audit.mark()
	start = time.Now()
	_, err = b.env.Kube.AppsV1().Deployments(dns).Patch(ctx, "sidecar", types.StrategicMergePatchType,
		[]byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":%q}]}}}}`, imageV2)), metav1.PatchOptions{})
	mustNoErr(t, err, "patch Deployment")
	done = dw.waitReady(t, n, imageV2, b.s.waitBudget)
	reqs, writes = b.audit.count(from, isKCM)
	deploy := row{scenario: "sidecar upgrade", subject: "Deployment RollingUpdate (recreates pods)", wall: done.Sub(start), requests: reqs, writes: writes,
		ratio: "baseline", note: fmt.Sprintf("%d pods", n)}
	b.cleanup(dns)

	upgrade.ratio = fmt.Sprintf("%.2f× Deployment", ratio(upgrade.wall, deploy.wall))
	for _, r := range []row{upgrade, deploy} {
		record(r)
		t.Logf("%s: %.2f s, %s", r.subject, r.wall.Seconds(), formatRequests(r.requests))
	}
}

// waitSidecar polls (every 20 ms) until exactly n live pods are Ready with
// container "sidecar" on image in spec and status, and returns when that
// was first seen.
func (p *pods) waitSidecar(t *testing.T, n int, image string, budget time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(budget)
	for {
		ready, live := 0, 0
		for _, o := range p.store.List() {
			pod := o.(*corev1.Pod)
			if pod.DeletionTimestamp != nil {
				continue
			}
			live++
			if pod.Status.Phase == corev1.PodRunning && sidecarOn(pod, image) && podIsReady(pod) {
				ready++
			}
		}
		if ready == n && live == n {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %d of %d pods ready with sidecar %q (%d live)", budget, ready, n, image, live)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *pods) uids() map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, o := range p.store.List() {
		out[o.(*corev1.Pod).UID] = true
	}
	return out
}

func sameKeys(a, b map[types.UID]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func sidecarOn(pod *corev1.Pod, image string) bool {
	spec, status := false, false
	for _, c := range pod.Spec.Containers {
		spec = spec || (c.Name == "sidecar" && c.Image == image)
	}
	for _, c := range pod.Status.ContainerStatuses {
		status = status || (c.Name == "sidecar" && c.Image == image)
	}
	return spec && status
}

func podIsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
