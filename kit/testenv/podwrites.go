package testenv

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// PodWrites counts, from a watch of one namespace's pods, what happened to
// each pod since it started: label writes, annotation writes, spec writes
// (a container change is a restart), container restarts, deletions and
// creations. Takeover tests (issue 23) assert with it that a controller
// taking over a workload wrote at most one label per pod and nothing else.
type PodWrites struct {
	mu     sync.Mutex
	last   map[types.UID]*corev1.Pod
	counts map[string]*PodWriteCount
	err    error
}

// PodWriteCount is one pod's tally (by pod name).
type PodWriteCount struct {
	Labels, Annotations, Spec, Restarts, Deleted, Created int
}

// WatchPodWrites starts counting the writes to pods in ns from now (the
// pods that exist are its baseline) until the test ends.
func WatchPodWrites(t testing.TB, kube kubernetes.Interface, ns string) *PodWrites {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatalf("testenv: list pods of %s: %v", ns, err)
	}
	pw := &PodWrites{last: map[types.UID]*corev1.Pod{}, counts: map[string]*PodWriteCount{}}
	for i := range list.Items {
		p := list.Items[i]
		pw.last[p.UID] = &p
		pw.counts[p.Name] = &PodWriteCount{}
	}
	w, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		cancel()
		t.Fatalf("testenv: watch pods of %s: %v", ns, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			pw.observe(ev)
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	return pw
}

func (pw *PodWrites) observe(ev watch.Event) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		if ev.Type == watch.Error {
			pw.err = fmt.Errorf("pod watch error: %v", ev.Object)
		}
		return
	}
	c := pw.counts[p.Name]
	if c == nil {
		c = &PodWriteCount{}
		pw.counts[p.Name] = c
	}
	prev := pw.last[p.UID]
	switch ev.Type {
	case watch.Added:
		if prev == nil {
			c.Created++
		}
	case watch.Deleted:
		c.Deleted++
		delete(pw.last, p.UID)
		return
	case watch.Modified:
		if prev == nil {
			break
		}
		if !maps.Equal(prev.Labels, p.Labels) {
			c.Labels++
		}
		if !maps.Equal(prev.Annotations, p.Annotations) {
			c.Annotations++
		}
		if !equality.Semantic.DeepEqual(prev.Spec, p.Spec) {
			c.Spec++
		}
		c.Restarts += restartsSince(prev, p)
	}
	pw.last[p.UID] = p
}

func restartsSince(prev, now *corev1.Pod) int {
	before := map[string]int32{}
	for _, s := range prev.Status.ContainerStatuses {
		before[s.Name] = s.RestartCount
	}
	n := 0
	for _, s := range now.Status.ContainerStatuses {
		if s.RestartCount > before[s.Name] {
			n += int(s.RestartCount - before[s.Name])
		}
	}
	return n
}

// Counts returns a copy of the tallies by pod name, and the watch's error.
func (pw *PodWrites) Counts() (map[string]PodWriteCount, error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	out := make(map[string]PodWriteCount, len(pw.counts))
	for k, v := range pw.counts {
		out[k] = *v
	}
	return out, pw.err
}

// Untouched returns an error naming the first pod that was deleted,
// created, restarted, had its spec or annotations written, or had its
// labels written more than maxLabelWrites times; nil if none. With names,
// only those pods are checked (others, e.g. created by the test, are not).
func (pw *PodWrites) Untouched(maxLabelWrites int, names ...string) error {
	counts, err := pw.Counts()
	if err != nil {
		return err
	}
	if len(names) > 0 {
		only := make(map[string]PodWriteCount, len(names))
		for _, n := range names {
			only[n] = counts[n]
		}
		counts = only
	}
	for name, c := range counts {
		if c.Deleted > 0 || c.Created > 0 || c.Restarts > 0 || c.Spec > 0 || c.Annotations > 0 || c.Labels > maxLabelWrites {
			return fmt.Errorf("pod %s: %+v (allowed: at most %d label writes, nothing else)", name, c, maxLabelWrites)
		}
	}
	return nil
}
