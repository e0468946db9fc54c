package framework

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Pods lists the pods in ns matching selector.
func Pods(t testing.TB, env *testenv.Env, ns, selector string) []corev1.Pod {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	return list.Items
}

// ReadyOn is a testenv.Eventually condition: exactly n pods in ns match
// selector, all Ready, not terminating, with image in their first container.
func ReadyOn(t testing.TB, env *testenv.Env, ns, selector, image string, n int) func() (bool, error) {
	return func() (bool, error) {
		ps := Pods(t, env, ns, selector)
		ready := 0
		for _, p := range ps {
			if testenv.PodReady(&p) && p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == image {
				ready++
			}
		}
		return ready == n && len(ps) == n, nil
	}
}

// OnPods calls fn with every version of every pod in ns (narrowed by tweak,
// e.g. a field selector; nil for all) that a watch delivers, from before the
// test creates them until it ends: intermediate states that last a few
// milliseconds, which polling would miss. fn runs on one goroutine at a time.
func OnPods(t testing.TB, env *testenv.Env, ns string, tweak func(*metav1.ListOptions), fn func(*corev1.Pod)) {
	t.Helper()
	opts := []informers.SharedInformerOption{informers.WithNamespace(ns)}
	if tweak != nil {
		opts = append(opts, informers.WithTweakListOptions(tweak))
	}
	f := informers.NewSharedInformerFactoryWithOptions(env.Kube, 0, opts...)
	inf := f.Core().V1().Pods().Informer()
	add := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			fn(p)
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, o any) { add(o) }})
	require.NoError(t, err)
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	require.True(t, cache.WaitForCacheSync(stop, inf.HasSynced))
}
