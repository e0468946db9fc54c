package lab

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// KwokComplete is the pod annotation the cluster's kwok stages read
// (hack/cluster/README.md): "Succeeded" or "Failed" drives a Running pod to
// that phase, "Never" keeps a Job's pod Running until the test finishes it.
const KwokComplete = "sim.kwok.x-k8s.io/complete"

// PodObjects are the create/get/modify/wait helpers for the namespace's pods
// (testenv.Objects), e.g. to wait on one named pod.
func (l *Lab) PodObjects() *testenv.Objects[*corev1.Pod] {
	return testenv.ObjectsOf(l.T, l.Env.Kube.CoreV1().Pods(l.NS), l.Timeout)
}

// ListPods returns every pod of the namespace matching the label selector,
// terminating ones included (Pods leaves those out), by name: what a test
// counting all of a workload's pods sees.
func (l *Lab) ListPods(selector string) []corev1.Pod {
	l.T.Helper()
	list, err := l.Env.Kube.CoreV1().Pods(l.NS).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		l.T.Fatalf("lab: list pods %s: %v", selector, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// CompletePod has kwok finish the running pod called name in phase
// (Succeeded or Failed) through the KwokComplete annotation.
func (l *Lab) CompletePod(name string, phase corev1.PodPhase) {
	l.T.Helper()
	l.PatchPod(name, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, KwokComplete, phase))
}
