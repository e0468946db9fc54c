// Package integration runs the real ResourceDistribution reconciler in-process against the local control plane
// (kit/testenv). A distribution is cluster-scoped and the cluster is shared, so each test's reconciler sees only
// its own distribution (a field selector on its name), and each distribution targets only namespaces the test
// created and labelled with a value unique to it.
package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/resourcedistribution/internal/controller"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const waitTimeout = 60 * time.Second

// targetLabel marks the namespaces of one test; its value is the test's unique id.
const targetLabel = "rd-test.flotilla.dev/target"

type harness struct {
	*lab.Lab
	id  string // unique per test: the distribution's name and the namespaces' label value
	rds *testenv.Objects[*appsv1alpha1.ResourceDistribution]
	// copyWrites counts the controllers' POST, PUT, PATCH and DELETE requests to Secrets and ConfigMaps, and
	// copyUpdates the PUTs and PATCHes alone: a no-op update leaves resourceVersion alone, so only the requests
	// show that nothing was written.
	copyWrites, copyUpdates atomic.Int64
}

type countingTransport struct {
	rt http.RoundTripper
	h  *harness
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && (strings.Contains(r.URL.Path, "/secrets") || strings.Contains(r.URL.Path, "/configmaps")) {
		c.h.copyWrites.Add(1)
		if r.Method == http.MethodPut || r.Method == http.MethodPatch {
			c.h.copyUpdates.Add(1)
		}
	}
	return c.rt.RoundTrip(r)
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout), id: "rd-" + rand.String(8)}
	h.rds = testenv.ObjectsOf(t, h.Client.AppsV1alpha1().ResourceDistributions(), waitTimeout)
	h.rds.Describe = func(rd *appsv1alpha1.ResourceDistribution) string {
		b, _ := json.Marshal(rd.Status)
		return string(b)
	}
	t.Cleanup(func() {
		err := h.Client.AppsV1alpha1().ResourceDistributions().Delete(context.Background(), h.id, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete ResourceDistribution %s: %v", h.id, err)
		}
	})
	return h
}

// startController runs a reconciler that sees only this test's distribution, over cluster-wide namespace and
// copy informers; the returned function stops it.
func (h *harness) startController() (stop func()) {
	h.T.Helper()
	return h.startControllerQPS(0)
}

// startControllerQPS is startController with the controller's client limited to qps requests per second (0: the
// default), to catch it in the middle of its work.
func (h *harness) startControllerQPS(qps float32) (stop func()) {
	h.T.Helper()
	d := h.Deps("resourcedistribution-test", h.Gates([]featuregate.Feature{features.ResourceDistributionGate}, nil))
	d.KubeInformers = informers.NewSharedInformerFactoryWithOptions(h.Env.Kube, 0, informers.WithTransform(kitcontroller.StripManagedFields))
	d.Informers = flotillainformers.NewSharedInformerFactoryWithOptions(h.Client, 0,
		flotillainformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + h.id }))
	d.Namespace = ""
	cfg := rest.CopyConfig(h.Env.Config)
	if qps > 0 {
		cfg.QPS, cfg.Burst = qps, 1
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{rt: rt, h: h} })
	d.Kube = kubernetes.NewForConfigOrDie(cfg)
	c, err := controller.New(d)
	require.NoError(h.T, err)
	return h.Start(c, 2, d)
}

// namespaces creates n namespaces labelled as this test's targets (label value: the test's id) and returns
// their names; they are deleted when the test ends.
func (h *harness) namespaces(n int, labelled bool) []string {
	h.T.Helper()
	out := make([]string, 0, n)
	for range n {
		ns := h.Env.Namespace(h.T)
		if labelled {
			h.labelNamespace(ns, h.id)
		}
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// labelNamespace sets (value != "") or removes the target label.
func (h *harness) labelNamespace(ns, value string) {
	h.T.Helper()
	testenv.ObjectsOf(h.T, h.Env.Kube.CoreV1().Namespaces(), waitTimeout).Modify(ns, func(n *corev1.Namespace) {
		if value == "" {
			delete(n.Labels, targetLabel)
			return
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[targetLabel] = value
	})
}

// secretSource is a Secret as a user writes it in spec.resource.
func secretSource(name string, data map[string]string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata":   map[string]any{"name": name, "labels": map[string]any{"app": "demo"}, "annotations": map[string]any{"owner": "team-a"}},
		"stringData": data}
}

func raw(t testing.TB, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return runtime.RawExtension{Raw: b}
}

// bySelector is a distribution of resource to the namespaces labelled with the test's id.
func (h *harness) bySelector(resource any) *appsv1alpha1.ResourceDistribution {
	return &appsv1alpha1.ResourceDistribution{
		ObjectMeta: metav1.ObjectMeta{Name: h.id},
		Spec: appsv1alpha1.ResourceDistributionSpec{
			Resource: raw(h.T, resource),
			Targets: appsv1alpha1.ResourceDistributionTargets{
				NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{targetLabel: h.id}},
			},
		},
	}
}

func (h *harness) secret(ns, name string) (*corev1.Secret, error) {
	return h.Env.Kube.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// waitCopies polls until every namespace in nss holds a copy of name for which cond holds, and returns them
// by namespace.
func (h *harness) waitCopies(nss []string, name, what string, cond func(*corev1.Secret) bool) map[string]*corev1.Secret {
	h.T.Helper()
	out := map[string]*corev1.Secret{}
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		for _, ns := range nss {
			s, err := h.secret(ns, name)
			if err != nil {
				return false, fmt.Errorf("%s: copy in %s: %w", what, ns, err)
			}
			if !cond(s) {
				return false, fmt.Errorf("%s: copy in %s: %v / %v", what, ns, s.Annotations, s.Data)
			}
			out[ns] = s
		}
		return true, nil
	})
	return out
}

// waitNoCopy polls until namespace ns holds no object named name.
func (h *harness) waitNoCopy(ns, name string) {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		_, err := h.secret(ns, name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("copy in %s still there (%v)", ns, err)
	})
}

func (h *harness) waitStatus(what string, cond func(appsv1alpha1.ResourceDistributionStatus) bool) appsv1alpha1.ResourceDistributionStatus {
	h.T.Helper()
	return h.rds.WaitFor(h.id, what, func(rd *appsv1alpha1.ResourceDistribution) bool { return cond(rd.Status) }).Status
}

func condition(st appsv1alpha1.ResourceDistributionStatus, t appsv1alpha1.ResourceDistributionConditionType) appsv1alpha1.ResourceDistributionCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return appsv1alpha1.ResourceDistributionCondition{}
}

func counts(desired, succeeded int32) func(appsv1alpha1.ResourceDistributionStatus) bool {
	return func(st appsv1alpha1.ResourceDistributionStatus) bool {
		return st.Desired == desired && st.Succeeded == succeeded && st.Failed == desired-succeeded && len(st.Conditions) == 6
	}
}

func hashOf(s *corev1.Secret) string {
	return s.Annotations[appsv1alpha1.ResourceDistributionHashAnnotation]
}

// watchCopyWrites watches the objects named name in nss (Secrets carrying the copy label) from now on; the
// returned function reports how many were added, modified and deleted so far.
func (h *harness) watchCopyWrites(nss []string, name string) func() (added, modified, deleted int) {
	h.T.Helper()
	in := map[string]bool{}
	for _, ns := range nss {
		in[ns] = true
	}
	w, err := h.Env.Kube.CoreV1().Secrets(metav1.NamespaceAll).Watch(context.Background(), metav1.ListOptions{
		LabelSelector: controller.CopyLabel + "=true", FieldSelector: "metadata.name=" + name})
	require.NoError(h.T, err)
	h.T.Cleanup(w.Stop)
	var mu sync.Mutex
	var a, m, d int
	go func() {
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*corev1.Secret)
			if !ok || !in[s.Namespace] {
				continue
			}
			mu.Lock()
			switch ev.Type {
			case watch.Added:
				a++
			case watch.Modified:
				m++
			case watch.Deleted:
				d++
			}
			mu.Unlock()
		}
	}()
	return func() (int, int, int) {
		mu.Lock()
		defer mu.Unlock()
		return a, m, d
	}
}
