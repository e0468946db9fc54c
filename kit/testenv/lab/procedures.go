package lab

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// The generic procedures the workload controllers' integration tests share:
// crash a controller mid-operation and restart it, heal a stranded pod,
// refuse hostile specs, serve the widest spec in bursts. Each is what two or
// more controllers' tests did, written once; the checks are theirs.

// KillWhen polls (up to the lab's timeout) until cond holds, then kills the
// running controller — *stop cancels its context, which aborts in-flight
// requests mid-sync, and discards its caches, expectations and queue — and
// starts a fresh one with start, whose stop function replaces *stop. It is
// the crash of the crash-safety tests: what must survive it is what the API
// server holds.
func (l *Lab) KillWhen(what string, cond func() bool, stop *func(), start func() (stop func())) {
	l.T.Helper()
	testenv.Eventually(l.T, l.Timeout, func() (bool, error) { return cond(), nil })
	(*stop)()
	l.T.Logf("killed the controller (%s)", what)
	*stop = start()
}

// WaitCaughtUp polls until a pod watcher has seen exactly the pods matching
// selector that the API server lists now (same names, UIDs and
// resourceVersions), so that a final check of the watcher sees every event
// up to the end state. seen returns the watcher's last version of every pod
// not deleted yet, by name; it is called with mu held.
func (l *Lab) WaitCaughtUp(selector string, mu sync.Locker, seen func() map[string]*corev1.Pod) {
	l.T.Helper()
	testenv.Eventually(l.T, l.Timeout, func() (bool, error) {
		list, err := l.Env.Kube.CoreV1().Pods(l.NS).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		mu.Lock()
		defer mu.Unlock()
		pods := seen()
		if len(pods) != len(list.Items) {
			return false, fmt.Errorf("watcher has %d pods, API %d", len(pods), len(list.Items))
		}
		for _, p := range list.Items {
			if q := pods[p.Name]; q == nil || q.UID != p.UID || q.ResourceVersion != p.ResourceVersion {
				return false, fmt.Errorf("watcher behind on %s", p.Name)
			}
		}
		return true, nil
	})
}

// CheckHealedInPlace checks the end of a stranded in-place update that the
// restarted controller healed after the rollout was reverted: the same pods
// as before (none replaced), each still at image and with no in-place
// update state (no update was started).
func CheckHealedInPlace(t *testing.T, before, after []corev1.Pod, image string) {
	t.Helper()
	assert.Equal(t, testenv.PodUIDs(before), testenv.PodUIDs(after), "no pod replaced")
	for _, p := range after {
		assert.Equal(t, image, p.Spec.Containers[0].Image, p.Name)
		assert.NotContains(t, p.Annotations, pub.InPlaceUpdateStateKey, "no update was started")
	}
}

// CountEvents sums the counts of the events about the object called name
// that match (an event seen once counts 1).
func (l *Lab) CountEvents(name string, match func(corev1.Event) bool) int32 {
	var n int32
	for _, e := range l.Events(name) {
		if match(e) {
			n += max(e.Count, 1)
		}
	}
	return n
}

// BacksOffUnwritten checks what follows a pod write the API server rejects:
// for 3 seconds the pods stay in service and unwritten (untouched, e.g.
// testenv.InServiceUnwritten), and the rejections counted by count stay
// within 20. One dry run per attempt, retried with the queue's exponential
// back-off (5 ms doubling), makes about ten in these seconds; a loop
// re-triggered by its own pod writes would reach the event recorder's spam
// cap (25) at once.
func (l *Lab) BacksOffUnwritten(untouched func() error, count func() int32) {
	l.T.Helper()
	testenv.Consistently(l.T, 3*time.Second, untouched)
	n := count()
	l.T.Logf("FailedUpdatePodInPlace events after the rejection: %d", n)
	assert.LessOrEqual(l.T, n, int32(20), "retries back off")
}

// Refusal is a hostile object the API server must refuse as Invalid, with
// Want in the error.
type Refusal[T any] struct {
	Name   string
	Object T
	Want   string
}

// RefusedAtAdmission creates each case's object with create, in a subtest
// named after the case, and checks that the API server refuses it as
// Invalid, saying Want.
func RefusedAtAdmission[T any](t *testing.T, create func(context.Context, T, metav1.CreateOptions) (T, error), cases []Refusal[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := create(context.Background(), tc.Object, metav1.CreateOptions{})
			require.Error(t, err, "the API server accepted it")
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.ErrorContains(t, err, tc.Want)
		})
	}
}

// CheckLongestName checks the pods of a workload named with the longest name
// admission allows: every pod's controller-revision-hash label is a valid
// label value (at most 63 characters), and the update revision is named
// <name>-<hash>.
func CheckLongestName(t *testing.T, name string, pods []corev1.Pod, updateRevision string) {
	t.Helper()
	for _, p := range pods {
		assert.LessOrEqual(t, len(p.Labels[pub.ControllerRevisionHashLabelKey]), 63, p.Name)
	}
	assert.True(t, strings.HasPrefix(updateRevision, name+"-"))
}

// FirstBurst is the procedure of the widest-spec tests: a ResourceQuota of
// quota pods with requests (NotBestEffort) in the namespace, as a tenant's
// would; the test process's heap (controller, informers and the test's
// clients) sampled while run starts the controller, creates the big workload
// (its pods held by testenv.HoldPods, so they load neither the scheduler nor
// the nodes) and a small one beside it, and waits for the small one to
// settle; then firstBurst waits for the big one's first burst of pods. It
// returns those pods and the peak heap, which must stay below 256 MiB.
func (l *Lab) FirstBurst(quota int64, run func(), firstBurst func() []corev1.Pod) ([]corev1.Pod, uint64) {
	l.T.Helper()
	l.Env.PodQuota(l.T, l.NS, quota)
	heap := testenv.SampleHeap(l.T, 100*time.Millisecond)
	run()
	pods := firstBurst()
	peak := heap.Stop()
	assert.Less(l.T, peak, uint64(256<<20), "peak heap of the test process")
	return pods, peak
}
