package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Identities in the audit log. Every component authenticates as itself:
// cloneset-controller with its ServiceAccount, kube-controller-manager with
// one ServiceAccount per controller (--use-service-account-credentials) or
// its own user, the raw client as the admin with its own user agent.
const (
	clonesetUser    = "system:serviceaccount:flotilla-system:cloneset-controller"
	statefulSetUser = "system:serviceaccount:flotilla-system:statefulset-controller"
	rawUserAgent    = "flotilla-bench-raw"
)

func isCloneSet(user, _ string) bool    { return user == clonesetUser }
func isStatefulSet(user, _ string) bool { return user == statefulSetUser }
func isKCM(user, _ string) bool {
	return user == "system:kube-controller-manager" || strings.HasPrefix(user, "system:serviceaccount:kube-system:")
}
func isRaw(_, agent string) bool { return strings.HasPrefix(agent, rawUserAgent) }

// isKwok matches the simulated kubelets: their pod status patches are part of
// what a workload costs the API server (a pod whose readiness gates are
// written late is played twice).
func isKwok(user, _ string) bool { return user == "kwok-controller" }

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// audit reads the kube-apiserver audit log (Metadata level, one JSON event per
// line) of the cluster.
type audit struct{ path string }

func newAudit(env *testenv.Env) *audit {
	p := filepath.Join(clusterDir(env), "logs", "audit.log")
	if _, err := os.Stat(p); err != nil {
		return nil
	}
	return &audit{path: p}
}

// clusterDir is the directory of the cluster's kubeconfig, logs and pid files.
func clusterDir(env *testenv.Env) string { return filepath.Dir(env.KubeconfigPath) }

// mark returns the current end of the log.
func (a *audit) mark() int64 {
	if a == nil {
		return 0
	}
	st, err := os.Stat(a.path)
	if err != nil {
		return 0
	}
	return st.Size()
}

type auditEvent struct {
	AuditID   string `json:"auditID"`
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// count returns the requests made by the matching identity since offset from,
// by verb, and how many were writes. Each request counts once (a watch logs
// ResponseStarted and, when it ends, ResponseComplete). nil: no audit log.
func (a *audit) count(from int64, match func(user, agent string) bool) (map[string]int, int) {
	var byVerb map[string]int
	var writes int
	a.scan(from, func(r io.Reader) { byVerb, writes = countEvents(r, match) })
	return byVerb, writes
}

// conflicts returns how many of the matching identity's requests since offset
// from were answered 409 (a write from a stale copy).
func (a *audit) conflicts(from int64, match func(user, agent string) bool) int {
	n := 0
	a.scan(from, func(r io.Reader) { n = countConflicts(r, match) })
	return n
}

// scan hands read the audit log from offset from (nothing without a log).
func (a *audit) scan(from int64, read func(io.Reader)) {
	if a == nil {
		return
	}
	f, err := os.Open(a.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return
	}
	read(f)
}

func countEvents(r io.Reader, match func(user, agent string) bool) (map[string]int, int) {
	byVerb := map[string]int{}
	writes := 0
	eachRequest(r, match, func(e auditEvent) {
		byVerb[e.Verb]++
		if writeVerbs[e.Verb] {
			writes++
		}
	})
	return byVerb, writes
}

func countConflicts(r io.Reader, match func(user, agent string) bool) int {
	n := 0
	eachRequest(r, match, func(e auditEvent) {
		if e.ResponseStatus.Code == http.StatusConflict {
			n++
		}
	})
	return n
}

// eachRequest calls fn once per request of the matching identity, at the
// first logged stage that carries a response (ResponseStarted for a watch,
// ResponseComplete or Panic otherwise).
func eachRequest(r io.Reader, match func(user, agent string) bool, fn func(auditEvent)) {
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || seen[e.AuditID] || !match(e.User.Username, e.UserAgent) {
			continue
		}
		if e.Stage != "ResponseStarted" && e.Stage != "ResponseComplete" && e.Stage != "Panic" {
			continue
		}
		seen[e.AuditID] = true
		fn(e)
	}
}

// procStats reads a process's own accounting: peak resident set (VmHWM) in
// MiB and CPU time (user+system) in seconds.
func procStats(pid int) (rssMiB, cpuSec float64, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			rssMiB = kb / 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command (which may hold spaces) start after the last ')'.
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	// utime and stime are fields 14 and 15 of the whole line: 12 and 13 here.
	ut, _ := strconv.ParseFloat(rest[11], 64)
	stt, _ := strconv.ParseFloat(rest[12], 64)
	const clockTicks = 100 // USER_HZ on Linux
	return rssMiB, (ut + stt) / clockTicks, nil
}

// metricValue returns the value of the sample `name{<label>}` in a Prometheus
// text exposition (0 when absent).
func metricValue(body, name, label string) float64 {
	prefix := name + "{" + label + "}"
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix+" ") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, prefix)), 64)
			return v
		}
	}
	return 0
}

// pods watches the pods of a namespace matching a label selector and counts
// the live ones that are Running and Ready (with a given image, if set).
type pods struct {
	mu    sync.Mutex
	store cache.Store
	stop  chan struct{}
}

func watchPods(t *testing.T, env *testenv.Env, ns, selector string) *pods {
	t.Helper()
	f := informers.NewSharedInformerFactoryWithOptions(env.Kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := f.Core().V1().Pods().Informer()
	p := &pods{store: inf.GetStore(), stop: make(chan struct{})}
	f.Start(p.stop)
	f.WaitForCacheSync(p.stop)
	t.Cleanup(func() { close(p.stop); f.Shutdown() })
	return p
}

// ready returns the number of live, Running and Ready pods (running image,
// if not empty) and the number of live pods.
func (p *pods) ready(image string) (ready, live int) {
	for _, o := range p.store.List() {
		pod := o.(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			continue
		}
		live++
		if pod.Status.Phase != corev1.PodRunning || (image != "" && pod.Spec.Containers[0].Image != image) {
			continue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, live
}

// waitReady polls (every 20 ms) until exactly n live pods are Ready on
// image and returns when that was first seen.
func (p *pods) waitReady(t *testing.T, n int, image string, budget time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(budget)
	for {
		r, l := p.ready(image)
		if r == n && l == n {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %d of %d pods ready on %q (%d live)", budget, r, n, image, l)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGone deletes nothing; it waits until the namespace has no pods left.
func waitNoPods(t *testing.T, env *testenv.Env, ns string, budget time.Duration) {
	t.Helper()
	testenv.Eventually(t, budget, func() (bool, error) {
		list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
}

// quiet polls a controller's metrics until its queue has processed at least
// minSyncs keys, is empty, and has stayed so for quietFor. It returns when
// the last sync before that finished (relative to start) and the sync count.
func quiet(t *testing.T, scrape func() (string, error), queue string, minSyncs int, start time.Time, quietFor, budget time.Duration) (time.Duration, int) {
	t.Helper()
	label := fmt.Sprintf("name=%q", queue)
	deadline := time.Now().Add(budget)
	last, lastChange := -1.0, time.Now()
	for {
		body, err := scrape()
		if err == nil {
			syncs := metricValue(body, "workqueue_work_duration_seconds_count", label)
			depth := metricValue(body, "workqueue_depth", label)
			if syncs != last {
				last, lastChange = syncs, time.Now()
			}
			if int(syncs) >= minSyncs && depth == 0 && time.Since(lastChange) >= quietFor {
				return lastChange.Sub(start), int(syncs)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s not quiet after %s: %v syncs (want ≥ %d), last error %v", queue, budget, last, minSyncs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustNoErr(t *testing.T, err error, what string) {
	t.Helper()
	require.NoError(t, err, what)
}

// components are the control plane's processes whose CPU a timed row also
// reports: on a shared 2-core host, work the subject causes elsewhere
// (encoding watch events, applying patches, kwok's plays) is time the
// subject waits for.
var components = []string{"kube-apiserver", "etcd", "kube-scheduler", "kwok"}

// componentCPU reads the control plane's CPU seconds from hack/cluster's pid
// files (a component without one is left out).
func componentCPU(env *testenv.Env) map[string]float64 {
	out := map[string]float64{}
	for _, c := range components {
		pid, err := componentPID(env, c)
		if err != nil {
			continue
		}
		if _, cpu, err := procStats(pid); err == nil {
			out[c] = cpu
		}
	}
	return out
}

// componentPID is a control-plane process's pid, from hack/cluster's pid file.
func componentPID(env *testenv.Env, name string) (int, error) {
	raw, err := os.ReadFile(filepath.Join(clusterDir(env), "run", name+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(raw)))
}

// formatCPU renders after − before per component, in components' order.
func formatCPU(before, after map[string]float64) string {
	var parts []string
	for _, c := range components {
		a, ok := after[c]
		if b, okb := before[c]; ok && okb {
			parts = append(parts, fmt.Sprintf("%s %.1f", c, a-b))
		}
	}
	return strings.Join(parts, ", ")
}
