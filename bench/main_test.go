package bench

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Sizes. Smoke sizes keep `make test` quick; `make bench` passes -bench.size=default.
type sizes struct {
	scaleUpPods          int
	scaleUpRounds        int
	restartSets          int
	restartPodsPerSet    int
	inPlacePods          int
	statefulSetPods      int
	admissionPods        int
	sidecarPods          int
	daemonSetNodes       int
	pubPods, pubDeletes  int
	rdNamespaces         int
	idle                 time.Duration
	quietFor, waitBudget time.Duration
}

var presets = map[string]sizes{
	"smoke":   {scaleUpPods: 20, scaleUpRounds: 1, restartSets: 3, restartPodsPerSet: 5, inPlacePods: 10, statefulSetPods: 20, admissionPods: 20, sidecarPods: 10, daemonSetNodes: 10, pubPods: 40, pubDeletes: 20, rdNamespaces: 20, idle: 5 * time.Second, quietFor: time.Second, waitBudget: 3 * time.Minute},
	"default": {scaleUpPods: 2000, scaleUpRounds: 3, restartSets: 100, restartPodsPerSet: 100, inPlacePods: 1000, statefulSetPods: 1000, admissionPods: 1000, sidecarPods: 1000, daemonSetNodes: 1000, pubPods: 1000, pubDeletes: 200, rdNamespaces: 1000, idle: 60 * time.Second, quietFor: 2 * time.Second, waitBudget: 10 * time.Minute},
}

var (
	flagSize        = flag.String("bench.size", "smoke", "scenario sizes: smoke or default")
	flagScaleUp     = flag.Int("bench.scaleup-pods", 0, "scale-up: pods (0: the size's default)")
	flagRounds      = flag.Int("bench.scaleup-rounds", 0, "scale-up: rounds, the subjects in a rotating order (0: the size's default)")
	flagSets        = flag.Int("bench.restart-sets", 0, "restart: CloneSets / Deployments (0: the size's default)")
	flagPerSet      = flag.Int("bench.restart-pods", 0, "restart: pods per CloneSet / Deployment (0: the size's default)")
	flagInPlace     = flag.Int("bench.inplace-pods", 0, "in-place rollout: pods (0: the size's default)")
	flagSTS         = flag.Int("bench.statefulset-pods", 0, "statefulset scale-up: pods (0: the size's default)")
	flagAdmission   = flag.Int("bench.admission-pods", 0, "pod admission: pods per namespace (0: the size's default)")
	flagSidecar     = flag.Int("bench.sidecar-pods", 0, "sidecar upgrade: pods (0: the size's default)")
	flagDSNodes     = flag.Int("bench.daemonset-nodes", 0, "daemonset: kwok nodes the DaemonSets cover (0: the size's default)")
	flagPubPods     = flag.Int("bench.pub-pods", 0, "pub guard: Ready pods per namespace (0: the size's default)")
	flagPubDeletes  = flag.Int("bench.pub-deletes", 0, "pub guard: concurrent deletes (0: the size's default)")
	flagIdle        = flag.Duration("bench.idle", 0, "idle: measuring window (0: the size's default)")
	flagQPS         = flag.Float64("bench.qps", 1000, "client QPS of the cloneset-controller and the raw client (kube-controller-manager's is set when the cluster starts: KUBE_API_QPS)")
	flagBurst       = flag.Int("bench.burst", 2000, "client burst, likewise (KUBE_API_BURST)")
	flagConcurrency = flag.Int("bench.concurrency", 64, "raw client: concurrent creates")
	flagReport      = flag.String("bench.report", "", "write the results table (Markdown) to this file")
)

func size() sizes {
	s, ok := presets[*flagSize]
	if !ok {
		panic(fmt.Sprintf("-bench.size=%q: want smoke or default", *flagSize))
	}
	override := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	override(&s.scaleUpPods, *flagScaleUp)
	override(&s.scaleUpRounds, *flagRounds)
	override(&s.restartSets, *flagSets)
	override(&s.restartPodsPerSet, *flagPerSet)
	override(&s.inPlacePods, *flagInPlace)
	override(&s.statefulSetPods, *flagSTS)
	override(&s.admissionPods, *flagAdmission)
	override(&s.sidecarPods, *flagSidecar)
	override(&s.daemonSetNodes, *flagDSNodes)
	override(&s.pubPods, *flagPubPods)
	override(&s.pubDeletes, *flagPubDeletes)
	if *flagIdle > 0 {
		s.idle = *flagIdle
	}
	return s
}

// row is one line of the results table.
type row struct {
	scenario, subject string
	wall              time.Duration // 0: not a timed row
	ratio             string        // against the scenario's baseline
	requests          map[string]int
	writes            int
	kwokWrites        int // the simulated kubelets' writes during the measurement (-1: not counted)
	conflicts         int // the subject's requests answered 409 (timed rows)
	kwokConflicts     int // the simulated kubelets' requests answered 409 (timed rows)
	rssMiB, cpuSec    float64
	systemCPU         string // the control plane's CPU seconds during the row, per component (timed rows)
	note              string
}

var (
	resultsMu sync.Mutex
	results   []row
	order     = map[string]int{"scale-up": 1, "restart": 2, "in-place rollout": 3, "idle": 4, "statefulset scale-up": 5,
		"daemonset create": 6, "daemonset rolling update": 7, "pod admission": 8, "sidecar upgrade": 9, "pub guard": 10, "takeover": 11,
		"resource distribution": 12}
)

func record(r row) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	results = append(results, r)
}

// TestMain always starts a private control plane (whatever
// FLOTILLA_KUBECONFIG says): the scenarios restart kube-controller-manager
// and need the audit log, so they cannot share a cluster with other tests.
func TestMain(m *testing.M) {
	flag.Parse()
	_ = os.Unsetenv(testenv.EnvKubeconfig)
	_ = os.Setenv("AUDIT", "1")
	// One kwok status write per started pod, as in the runs before hack/cluster/kwok/pod-pending.yaml existed, so
	// the figures stay comparable (KWOK_POD_PENDING_STEP=1 in the environment measures with the kubelet's Pending step).
	if os.Getenv("KWOK_POD_PENDING_STEP") == "" {
		_ = os.Setenv("KWOK_POD_PENDING_STEP", "0")
	}
	if os.Getenv(testenv.EnvNodes) == "" {
		// 110 pods per kwok node.
		s := size()
		pods := max(s.scaleUpPods, s.restartSets*s.restartPodsPerSet, s.inPlacePods, s.statefulSetPods, s.sidecarPods, 2*s.pubPods)
		_ = os.Setenv(testenv.EnvNodes, fmt.Sprint(max(3, pods/100+1)))
	}
	testenv.AfterRun(writeReport)
	testenv.Main(m)
}

// writeReport prints the table and, with -bench.report, writes it.
func writeReport() {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(results) == 0 {
		return
	}
	sort.SliceStable(results, func(i, j int) bool { return order[results[i].scenario] < order[results[j].scenario] })
	var b strings.Builder
	s := size()
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "Size %s (scale-up %d pods; restart %d × %d; in-place %d; idle %s), client QPS/burst %.0f/%d, %d CPUs, %s, %s, %s.\n\n",
		*flagSize, s.scaleUpPods, s.restartSets, s.restartPodsPerSet, s.inPlacePods, s.idle, *flagQPS, *flagBurst,
		runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, host, time.Now().UTC().Format(time.RFC3339))
	b.WriteString("| scenario | subject | time | ratio | API requests | writes | peak RSS MiB | CPU s | note |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		wall := "—"
		if r.wall > 0 {
			wall = fmt.Sprintf("%.2f s", r.wall.Seconds())
		}
		num := func(v float64, format string) string {
			if v <= 0 {
				return "—"
			}
			return fmt.Sprintf(format, v)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.scenario, r.subject, wall, orDash(r.ratio),
			formatRequests(r.requests), writesCell(r), num(r.rssMiB, "%.0f"), num(r.cpuSec, "%.2f"), r.note)
	}
	fmt.Print("\n" + b.String())
	if *flagReport != "" {
		if err := os.WriteFile(*flagReport, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench: writing report:", err)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func writesCell(r row) string {
	if r.requests == nil {
		return "n/a"
	}
	return fmt.Sprint(r.writes)
}

// formatRequests prints per-verb counts, most frequent first; nil means the
// audit log was not available.
func formatRequests(m map[string]int) string {
	if m == nil {
		return "n/a (no audit log)"
	}
	type kv struct {
		k string
		v int
	}
	var kvs []kv
	total := 0
	for k, v := range m {
		kvs = append(kvs, kv{k, v})
		total += v
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].v > kvs[j].v || kvs[i].v == kvs[j].v && kvs[i].k < kvs[j].k })
	parts := make([]string, 0, len(kvs))
	for _, e := range kvs {
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.v))
	}
	if len(parts) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d: %s", total, strings.Join(parts, ", "))
}
