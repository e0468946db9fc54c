package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

const (
	imageV1 = "registry.local/bench:v1"
	imageV2 = "registry.local/bench:v2"
)

func template(labels map[string]string, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

func newCloneSet(name string, n int, labels map[string]string, strategy appsv1alpha1.CloneSetUpdateStrategyType) *appsv1alpha1.CloneSet {
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas:       ptr.To(int32(n)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			Template:       template(labels, imageV1),
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: strategy, MaxUnavailable: ptr.To(intstr.FromString("20%"))},
		},
	}
}

func newDeployment(name string, n int, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template(labels, imageV1),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromString("20%")), MaxSurge: ptr.To(intstr.FromInt32(0)),
			}},
		},
	}
}

// bench is one scenario's handle on the cluster.
type bench struct {
	t      *testing.T
	env    *testenv.Env
	client versioned.Interface
	audit  *audit
	s      sizes
}

func newBench(t *testing.T) *bench {
	env := testenv.Get(t)
	return &bench{t: t, env: env, client: versioned.NewForConfigOrDie(env.Config), audit: newAudit(env), s: size()}
}

// startCloneSetController runs the built cloneset-controller under its
// ServiceAccount, restricted to ns, with the bench's client QPS/burst.
func (b *bench) startCloneSetController(ns string, extra ...string) *framework.Process {
	return b.startController("cloneset", ns, extra...)
}

// startController runs a built controller binary under its ServiceAccount,
// restricted to ns, with the bench's client QPS/burst.
func (b *bench) startController(name, ns string, extra ...string) *framework.Process {
	b.t.Helper()
	return framework.StartScoped(b.t, b.env, name, ns, append([]string{
		fmt.Sprintf("--rest-config-qps=%g", *flagQPS), fmt.Sprintf("--rest-config-burst=%d", *flagBurst),
	}, extra...)...)
}

func scrapeProcess(p *framework.Process) func() (string, error) {
	return func() (string, error) {
		resp, err := http.Get(p.MetricsURL + "/metrics")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
}

// cleanup deletes the workloads (kube-controller-manager's garbage collector
// removes their pods) and waits until the namespace has no pods, so the next
// measurement starts on a quiet cluster.
func (b *bench) cleanup(ns string) {
	b.t.Helper()
	ctx := context.Background()
	all := metav1.ListOptions{}
	_ = b.client.AppsV1alpha1().CloneSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	_ = b.env.Kube.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	_ = b.client.AppsV1beta1().StatefulSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	_ = b.env.Kube.AppsV1().StatefulSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	_ = b.env.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}, all)
	waitNoPods(b.t, b.env, ns, b.s.waitBudget)
}

// Scenario 1: 0 → N Ready pods as a CloneSet (cloneset-controller), as the
// same pods and pod writes made by the bench process without a controller
// (the floor of a CloneSet's writes, writesfloor_test.go), as a Deployment
// (kube-controller-manager), and as bare pods created by a raw client with the
// same QPS/burst — the floor set by the API server, kube-scheduler and the
// (simulated) kubelets.
//
// The subjects run in rounds, each round in a rotated order so that no
// subject always follows the same one, and each subject's median round is
// reported: one run of a subject moves by ±15 % with the host and with what
// ran before it (the CloneSet, always measured first before, took 17.2 s
// first and 16.1 s last in one run).
func TestScaleUp(t *testing.T) {
	b := newBench(t)
	n := b.s.scaleUpPods
	labels := map[string]string{"bench": "scaleup"}
	subjects := b.scaleUpSubjects(n, labels)
	rounds := make([][]row, len(subjects))
	for r := range b.s.scaleUpRounds {
		for i := range subjects {
			k := (i + r) % len(subjects)
			s := subjects[k]
			rounds[k] = append(rounds[k], b.measureReady("scale-up", s.name, "bench=scaleup", n, s.match, s.prepare, s.create))
			if s.done != nil {
				s.done()
			}
		}
	}
	cs, floor, deploy, raw := medianRow(rounds[0]), medianRow(rounds[1]), medianRow(rounds[2]), medianRow(rounds[3])

	cs.ratio = fmt.Sprintf("%.2f× Deployment, %.2f× raw, %.2f× its writes' floor", ratio(cs.wall, deploy.wall), ratio(cs.wall, raw.wall), ratio(cs.wall, floor.wall))
	floor.ratio = fmt.Sprintf("%.2f× Deployment: the floor of a CloneSet's writes", ratio(floor.wall, deploy.wall))
	deploy.ratio, raw.ratio = "baseline", "floor"
	cs.note = "peak RSS / CPU: cloneset-controller process"
	floor.note = "the CloneSet's pods and pod writes, made by the bench process: it creates the pods and writes each bound pod's gate conditions + Normal once; peak RSS / CPU: the bench process"
	deploy.note = "peak RSS / CPU: the whole kube-controller-manager"
	raw.note = "peak RSS / CPU: the bench process (includes its pod watch)"
	for i, r := range []row{cs, floor, deploy, raw} {
		if len(rounds[i]) > 1 {
			r.note = fmt.Sprintf("median of %d rounds (%s); ", len(rounds[i]), roundWalls(rounds[i])) + r.note
		}
		r.note += fmt.Sprintf("; answered 409: %d; simulated kubelets (kwok): %d writes, %d answered 409; control plane CPU s: %s",
			r.conflicts, r.kwokWrites, r.kwokConflicts, r.systemCPU)
		record(r)
		t.Logf("%s: %.2f s, %s; %s", r.subject, r.wall.Seconds(), formatRequests(r.requests), r.note)
	}
}

// scaleUpSubjects are the scale-up's subjects, in TestScaleUp's order:
// CloneSet, its writes' floor, Deployment, raw client.
func (b *bench) scaleUpSubjects(n int, labels map[string]string) []scaleUpSubject {
	t := b.t
	var writer *gateWriter
	return []scaleUpSubject{{
		name: "CloneSet (cloneset-controller)", match: isCloneSet,
		prepare: func(ns string) int { return b.startCloneSetController(ns).PID() },
		create: func(ns string) {
			_, err := b.client.AppsV1alpha1().CloneSets(ns).Create(context.Background(), newCloneSet("scaleup", n, labels, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType), metav1.CreateOptions{})
			mustNoErr(t, err, "create CloneSet")
		},
	}, {
		name: "CloneSet's writes, no controller (bench process)", match: isWritesFloor,
		prepare: func(ns string) int { writer = b.startGateWriter(ns, labels); return os.Getpid() },
		create:  func(string) { mustNoErr(t, writer.createPods(n), "create the pods") },
		done:    func() { writer.Stop() },
	}, {
		name: "Deployment (kube-controller-manager)", match: isKCM,
		prepare: func(string) int { return kcmPID(t, b.env) },
		create: func(ns string) {
			_, err := b.env.Kube.AppsV1().Deployments(ns).Create(context.Background(), newDeployment("scaleup", n, labels), metav1.CreateOptions{})
			mustNoErr(t, err, "create Deployment")
		},
	}, {
		name: fmt.Sprintf("raw client (%d concurrent)", *flagConcurrency), match: isRaw,
		prepare: func(string) int { return os.Getpid() },
		create:  func(ns string) { b.createRaw(ns, n, labels) },
	}}
}

// scaleUpSubject is one way of bringing the scale-up's pods up: prepare (not
// timed) starts what it needs and returns the pid whose accounting is
// reported, create starts the timed part, done (if set) runs after it.
type scaleUpSubject struct {
	name    string
	match   func(user, agent string) bool
	prepare func(ns string) int
	create  func(ns string)
	done    func()
}

// medianRow returns the row of median wall time (the lower median of an even
// count).
func medianRow(rows []row) row {
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b row) int { return cmp.Compare(a.wall, b.wall) })
	return sorted[(len(sorted)-1)/2]
}

// roundWalls lists rows' wall times in round order.
func roundWalls(rows []row) string {
	walls := make([]string, len(rows))
	for i, r := range rows {
		walls[i] = fmt.Sprintf("%.2f", r.wall.Seconds())
	}
	return strings.Join(walls, ", ") + " s"
}

// measureReady measures one subject of a scale-up: prepare (not timed)
// returns the pid whose accounting is reported, create starts the timed
// part, which ends when n pods matching selector are Ready on imageV1.
func (b *bench) measureReady(scenario, subject, selector string, n int, match func(string, string) bool, prepare func(ns string) int, create func(ns string)) row {
	t := b.t
	ns := b.env.Namespace(t)
	w := watchPods(t, b.env, ns, selector)
	pid := prepare(ns)
	from := b.audit.mark()
	_, cpu0, _ := procStats(pid)
	sys0 := componentCPU(b.env)
	start := time.Now()
	create(ns)
	done := w.waitReady(t, n, imageV1, b.s.waitBudget)
	rss, cpu1, _ := procStats(pid)
	sys1 := componentCPU(b.env)
	reqs, writes := b.audit.count(from, match)
	_, kwokWrites := b.audit.count(from, isKwok)
	conflicts, kwokConflicts := b.audit.conflicts(from, match), b.audit.conflicts(from, isKwok)
	b.cleanup(ns)
	return row{scenario: scenario, subject: subject, wall: done.Sub(start), requests: reqs, writes: writes, kwokWrites: kwokWrites, conflicts: conflicts, kwokConflicts: kwokConflicts, rssMiB: rss, cpuSec: cpu1 - cpu0, systemCPU: formatCPU(sys0, sys1)}
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return a.Seconds() / b.Seconds()
}

// createRaw creates n bare pods with the bench's QPS/burst and concurrency.
func (b *bench) createRaw(ns string, n int, labels map[string]string) {
	cfg := rest.CopyConfig(b.env.Config)
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(*flagQPS), *flagBurst, rawUserAgent
	kube, err := kubernetes.NewForConfig(cfg)
	mustNoErr(b.t, err, "raw client")
	tmpl := template(labels, imageV1)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	for range *flagConcurrency {
		wg.Go(func() {
			for i := range jobs {
				pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
				pod.Name = fmt.Sprintf("raw-%d", i)
				if _, err := kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
					errOnce.Do(func() { firstErr = err })
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	mustNoErr(b.t, firstErr, "raw create")
}

// kcmPID is the running kube-controller-manager's pid (hack/cluster's pid file).
func kcmPID(t *testing.T, env *testenv.Env) int {
	pid, err := componentPID(env, "kube-controller-manager")
	mustNoErr(t, err, "kube-controller-manager pid file")
	return pid
}

// restartKCM stops kube-controller-manager and starts it again with the same
// command line, updating hack/cluster's pid file so down.sh still stops it.
// It returns the new pid and the port serving its metrics.
func restartKCM(t *testing.T, env *testenv.Env) (int, string) {
	t.Helper()
	pid := kcmPID(t, env)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	mustNoErr(t, err, "kube-controller-manager cmdline")
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	proc, err := os.FindProcess(pid)
	mustNoErr(t, err, "find kube-controller-manager")
	mustNoErr(t, proc.Signal(syscall.SIGTERM), "stop kube-controller-manager")
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return os.IsNotExist(err), nil
	})
	logf, err := os.OpenFile(filepath.Join(clusterDir(env), "logs", "kube-controller-manager.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	mustNoErr(t, err, "kube-controller-manager log")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	mustNoErr(t, cmd.Start(), "start kube-controller-manager")
	go func() { _ = cmd.Wait(); logf.Close() }()
	mustNoErr(t, os.WriteFile(filepath.Join(clusterDir(env), "run", "kube-controller-manager.pid"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644), "pid file")
	port := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			port = v
		}
	}
	require.NotEmpty(t, port, "kube-controller-manager --secure-port")
	return cmd.Process.Pid, port
}

// scrapeKCM reads kube-controller-manager's /metrics with the admin's client
// certificate (its serving certificate is self-signed).
func scrapeKCM(t *testing.T, env *testenv.Env, port string) func() (string, error) {
	tlsCfg, err := rest.TLSConfigFor(env.Config)
	mustNoErr(t, err, "TLS config")
	tlsCfg = tlsCfg.Clone()
	tlsCfg.InsecureSkipVerify, tlsCfg.RootCAs = true, nil //nolint:gosec // local self-signed kcm serving cert
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	return func() (string, error) {
		resp, err := client.Get("https://127.0.0.1:" + port + "/metrics")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("kube-controller-manager /metrics: %s", resp.Status)
		}
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
}
