package bench

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// Scenario 5: 0 → N Ready pods as a Parallel Advanced StatefulSet
// (statefulset-controller) and as a Parallel apps/v1 StatefulSet
// (kube-controller-manager), on the same control plane.
func TestStatefulSetScaleUp(t *testing.T) {
	b := newBench(t)
	n := b.s.statefulSetPods
	labels := map[string]string{"bench": "sts"}
	run := func(subject string, match func(string, string) bool, prepare func(ns string) int, create func(ns string)) row {
		return b.measureReady("statefulset scale-up", subject, "bench=sts", n, match, prepare, create)
	}
	ours := run("Advanced StatefulSet (statefulset-controller)", isStatefulSet, func(ns string) int { return b.startController("statefulset", ns).PID() }, func(ns string) {
		set := &appsv1beta1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "sts"},
			Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To(int32(n)), ServiceName: "sts", PodManagementPolicy: appsv1.ParallelPodManagement,
				Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels, imageV1)},
		}
		_, err := b.client.AppsV1beta1().StatefulSets(ns).Create(context.Background(), set, metav1.CreateOptions{})
		mustNoErr(t, err, "create Advanced StatefulSet")
	})
	upstream := run("StatefulSet (kube-controller-manager)", isKCM, func(string) int { return kcmPID(t, b.env) }, func(ns string) {
		set := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "sts"},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(n)), ServiceName: "sts", PodManagementPolicy: appsv1.ParallelPodManagement,
				Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels, imageV1)},
		}
		_, err := b.env.Kube.AppsV1().StatefulSets(ns).Create(context.Background(), set, metav1.CreateOptions{})
		mustNoErr(t, err, "create StatefulSet")
	})
	ours.ratio = fmt.Sprintf("%.2f× StatefulSet", ratio(ours.wall, upstream.wall))
	upstream.ratio = "baseline"
	ours.note = "peak RSS / CPU: statefulset-controller process"
	upstream.note = "peak RSS / CPU: the whole kube-controller-manager"
	for _, r := range []row{ours, upstream} {
		record(r)
		t.Logf("%s: %.2f s, %s", r.subject, r.wall.Seconds(), formatRequests(r.requests))
	}
}
