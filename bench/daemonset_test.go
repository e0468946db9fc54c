package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

var (
	flagDSProfile    = flag.String("bench.daemonset-cpuprofile", "", "daemonset: write a CPU profile of daemonset-controller, taken from the DaemonSet's creation on, to this file")
	flagDSProfileFor = flag.Duration("bench.daemonset-cpuprofile-for", 10*time.Second, "daemonset: length of that profile")
	flagDSRounds     = flag.Int("bench.daemonset-rounds", 2, "daemonset: ABBA rounds (ours, kcm, kcm, ours) after the warm-up")
)

// Identities of the two DaemonSet controllers in the audit log: ours with its
// ServiceAccount, kube-controller-manager's DaemonSet controller with its own
// (--use-service-account-credentials), so its count leaves out the other
// controllers of the process.
const (
	daemonSetUser    = "system:serviceaccount:flotilla-system:daemonset-controller"
	kcmDaemonSetUser = "system:serviceaccount:kube-system:daemon-set-controller"
)

func isDaemonSet(user, _ string) bool    { return user == daemonSetUser }
func isKCMDaemonSet(user, _ string) bool { return user == kcmDaemonSetUser }

// dsOwner owns the scenario's kwok nodes (label and taint, kit/testenv).
const dsOwner = "bench-ds"

// dsSubject is one DaemonSet implementation under measurement.
type dsSubject struct {
	name   string
	match  func(user, agent string) bool
	start  func(ns string) int // starts the controller if needed, returns the pid to account
	create func(ns string, tmpl corev1.PodTemplateSpec, maxUnavailable intstr.IntOrString)
	roll   func(ns string) // sets the image to imageV2
	remove func(ns string)
	note   string
}

// Scenario 6: one DaemonSet over N kwok nodes (its own, tainted for it), as an
// Advanced DaemonSet (daemonset-controller) and as an apps/v1 DaemonSet
// (kube-controller-manager), one after the other on the same nodes: time
// until a Ready pod runs on every node, then a rolling update with
// maxUnavailable 10% until every node runs a Ready pod of the new image.
func TestDaemonSet(t *testing.T) {
	b := newBench(t)
	n := b.s.daemonSetNodes
	t0 := time.Now()
	b.env.KwokNodes(t, dsOwner, n, nil)
	t.Logf("%d kwok nodes Ready after %.1f s", n, time.Since(t0).Seconds())
	ctx := context.Background()
	patch := []byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":%q}]}}}}`, imageV2))
	ours := dsSubject{
		name: "Advanced DaemonSet (daemonset-controller)", match: isDaemonSet,
		note: "peak RSS / CPU: daemonset-controller process",
		start: func(ns string) int {
			var extra []string
			if *flagDSProfile != "" {
				extra = append(extra, "--pprof")
			}
			p := b.startController("daemonset", ns, extra...)
			if *flagDSProfile != "" {
				go profile(t, p.MetricsURL, *flagDSProfile, *flagDSProfileFor)
			}
			return p.PID()
		},
		create: func(ns string, tmpl corev1.PodTemplateSpec, maxUnavailable intstr.IntOrString) {
			ds := &appsv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds"}, Spec: appsv1alpha1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl,
				UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
					RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{Type: appsv1alpha1.StandardRollingUpdateType, MaxUnavailable: &maxUnavailable}},
			}}
			_, err := b.client.AppsV1alpha1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})
			mustNoErr(t, err, "create Advanced DaemonSet")
		},
		roll: func(ns string) {
			_, err := b.client.AppsV1alpha1().DaemonSets(ns).Patch(ctx, "ds", types.MergePatchType, patch, metav1.PatchOptions{})
			mustNoErr(t, err, "patch Advanced DaemonSet")
		},
		remove: func(ns string) {
			mustNoErr(t, b.client.AppsV1alpha1().DaemonSets(ns).Delete(ctx, "ds", metav1.DeleteOptions{}), "delete Advanced DaemonSet")
		},
	}
	upstream := dsSubject{
		name: "DaemonSet (kube-controller-manager)", match: isKCMDaemonSet,
		note:  "requests: its daemon-set-controller identity; peak RSS / CPU: the whole kube-controller-manager",
		start: func(string) int { return kcmPID(t, b.env) },
		create: func(ns string, tmpl corev1.PodTemplateSpec, maxUnavailable intstr.IntOrString) {
			ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds"}, Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl,
				UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable}},
			}}
			_, err := b.env.Kube.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})
			mustNoErr(t, err, "create DaemonSet")
		},
		roll: func(ns string) {
			_, err := b.env.Kube.AppsV1().DaemonSets(ns).Patch(ctx, "ds", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			mustNoErr(t, err, "patch DaemonSet")
		},
		remove: func(ns string) {
			mustNoErr(t, b.env.Kube.AppsV1().DaemonSets(ns).Delete(ctx, "ds", metav1.DeleteOptions{}), "delete DaemonSet")
		},
	}
	// The first DaemonSet on freshly joined nodes meets a cluster still
	// settling from them (watches closed and re-listed, kwok catching up): a
	// warm-up run of kube-controller-manager's, not measured, takes that
	// slot. Then ABBA rounds, so neither subject always runs first or last;
	// the rows are each subject's mean.
	warm, _ := b.measureDaemonSet(upstream)
	t.Logf("warm-up (not measured): %s: create %.2f s", upstream.name, warm.wall.Seconds())
	runs := map[string][][2]row{}
	var order []dsSubject
	for range *flagDSRounds {
		order = append(order, ours, upstream, upstream, ours)
	}
	for _, s := range order {
		c, r := b.measureDaemonSet(s)
		runs[s.name] = append(runs[s.name], [2]row{c, r})
		t.Logf("run: %s: create %.2f s, rolling update %.2f s", s.name, c.wall.Seconds(), r.wall.Seconds())
	}
	oc, or := meanRows(runs[ours.name], 0), meanRows(runs[ours.name], 1)
	uc, ur := meanRows(runs[upstream.name], 0), meanRows(runs[upstream.name], 1)
	oc.ratio = fmt.Sprintf("%.2f× DaemonSet", ratio(oc.wall, uc.wall))
	or.ratio = fmt.Sprintf("%.2f× DaemonSet", ratio(or.wall, ur.wall))
	uc.ratio, ur.ratio = "baseline", "baseline"
	for _, r := range []row{oc, uc, or, ur} {
		record(r)
		t.Logf("%s, %s: %.2f s, %s, RSS %.0f MiB, CPU %.2f s", r.scenario, r.subject, r.wall.Seconds(), formatRequests(r.requests), r.rssMiB, r.cpuSec)
	}
}

// meanRows averages phase i of a subject's runs: time, requests, writes and
// CPU are means, RSS the peak.
func meanRows(runs [][2]row, i int) row {
	out := runs[0][i]
	out.requests = map[string]int{}
	var wall time.Duration
	var writes int
	var cpu, rss float64
	for _, r := range runs {
		wall += r[i].wall
		writes += r[i].writes
		cpu += r[i].cpuSec
		rss = max(rss, r[i].rssMiB)
		for k, v := range r[i].requests {
			out.requests[k] += v
		}
	}
	n := len(runs)
	for k := range out.requests {
		out.requests[k] /= n
	}
	out.wall, out.writes, out.cpuSec, out.rssMiB = wall/time.Duration(n), writes/n, cpu/float64(n), rss
	out.note += fmt.Sprintf("; mean of %d runs (after a kcm warm-up, rounds of ours, kcm, kcm, ours)", n)
	return out
}

// measureDaemonSet measures one subject: creation until every node runs a
// Ready pod, then the rolling update; each row has its own requests, CPU
// time and the peak RSS at its end.
func (b *bench) measureDaemonSet(s dsSubject) (created, rolled row) {
	t := b.t
	n := b.s.daemonSetNodes
	ns := b.env.Namespace(t)
	labels := map[string]string{"bench": "ds"}
	tmpl := template(labels, imageV1)
	tmpl.Spec.NodeSelector = map[string]string{testenv.TestNodeLabel: dsOwner}
	tmpl.Spec.Tolerations = []corev1.Toleration{testenv.TestNodeToleration()}
	w := watchPods(t, b.env, ns, "bench=ds")
	pid := s.start(ns)

	phase := func(scenario string, act func(), image string) row {
		from := b.audit.mark()
		_, cpu0, _ := procStats(pid)
		start := time.Now()
		act()
		done := w.waitReady(t, n, image, b.s.waitBudget)
		rss, cpu1, _ := procStats(pid)
		reqs, writes := b.audit.count(from, s.match)
		t.Logf("%s, %s: requests by verb and resource: %v", scenario, s.name, b.audit.byResource(from, s.match))
		return row{scenario: scenario, subject: s.name, wall: done.Sub(start), requests: reqs, writes: writes, rssMiB: rss, cpuSec: cpu1 - cpu0, note: s.note}
	}
	created = phase("daemonset create", func() { s.create(ns, tmpl, intstr.FromString("10%")) }, imageV1)
	rolled = phase("daemonset rolling update", func() { s.roll(ns) }, imageV2)
	rolled.note += "; maxUnavailable 10%"
	s.remove(ns)
	b.cleanup(ns)
	return created, rolled
}

// byResource counts the requests of the matching identity since offset from
// by "verb resource[/subresource]" (a diagnostic for the log, not the table).
func (a *audit) byResource(from int64, match func(user, agent string) bool) map[string]int {
	if a == nil {
		return nil
	}
	f, err := os.Open(a.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil
	}
	out := map[string]int{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			auditEvent
			ObjectRef struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || seen[e.AuditID] || !match(e.User.Username, e.UserAgent) {
			continue
		}
		seen[e.AuditID] = true
		key := e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			key += "/" + e.ObjectRef.Subresource
		}
		out[key]++
	}
	return out
}

// profile saves a CPU profile of the process serving pprof at base.
func profile(t *testing.T, base, path string, d time.Duration) {
	client := &http.Client{Timeout: d + 30*time.Second}
	resp, err := client.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, int(d.Seconds())))
	if err != nil {
		t.Logf("cpu profile: %v", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		t.Logf("cpu profile: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Logf("cpu profile: %v", err)
	}
}
