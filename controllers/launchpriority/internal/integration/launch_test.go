package integration

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/webhook"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

var ordered = map[string]string{"apps.kruise.io/container-launch-priority": "Ordered"}

// barrierEnv returns each container's KRUISE_CONTAINER_BARRIER as "<configmap>/<key>" ("" when absent).
func barrierEnv(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		v := ""
		for _, e := range c.Env {
			if e.Name == "KRUISE_CONTAINER_BARRIER" && e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				v = e.ValueFrom.ConfigMapKeyRef.Name + "/" + e.ValueFrom.ConfigMapKeyRef.Key
			}
		}
		out = append(out, v)
	}
	return out
}

// countWrites makes the controller's client count its ConfigMap writes (POST, PATCH, PUT, DELETE).
func countWrites(h *harness, d *kubernetes.Interface) *atomic.Int32 {
	n := &atomic.Int32{}
	cfg := rest.CopyConfig(h.Env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/configmaps") {
				n.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	*d = kubernetes.NewForConfigOrDie(cfg)
	return n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// An Ordered pod: the webhook gives container i the barrier key p_-i; the controller creates the barrier owned
// by the pod with the first key, opens the next key only once every container before it is ready, writes the
// barrier only when a key is added (three writes for three containers, however many status updates), marks the
// pod completed, and the barrier goes with the pod.
func TestOrderedPodOpensKeysInOrder(t *testing.T) {
	h := newHarness(t)
	h.serveWebhook(admissionregistrationv1.Fail)
	d := h.Deps("launchpriority-test", nil)
	writes := countWrites(h, &d.Kube)
	c, err := controller.New(d)
	require.NoError(t, err)
	h.Start(c, 2, d)

	p, err := h.create(h.pod("ordered", ordered, nil, "a", "b", "c"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ordered-barrier/p_0", "ordered-barrier/p_-1", "ordered-barrier/p_-2"}, barrierEnv(p))

	cm := h.waitKeys("ordered", "p_0")
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "ordered", UID: p.UID}}, cm.OwnerReferences)

	// Status updates that make no container newly ready change nothing.
	h.setReady("ordered", map[string]bool{"a": false, "b": false, "c": false})
	h.setReady("ordered", map[string]bool{"a": false, "b": true, "c": false}) // b before a (a restart): still a's turn
	h.setReady("ordered", map[string]bool{"a": true, "b": false, "c": false})
	h.waitKeys("ordered", "p_0", "p_-1")
	h.setReady("ordered", map[string]bool{"a": true, "b": true, "c": false})
	h.waitKeys("ordered", "p_0", "p_-1", "p_-2")
	testenv.Eventually(t, timeout, func() (bool, error) {
		got, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), "ordered", metav1.GetOptions{})
		return err == nil && got.Annotations["apps.kruise.io/container-launch-priority-completed"] == "true", err
	})
	h.setReady("ordered", map[string]bool{"a": true, "b": true, "c": true})
	h.setReady("ordered", map[string]bool{"a": false, "b": true, "c": true})
	assert.EqualValues(t, 3, writes.Load(), "one barrier write per key")

	require.NoError(t, h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), "ordered", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	testenv.Eventually(t, timeout, func() (bool, error) { return h.barrier("ordered") == nil, nil })
}

// KRUISE_CONTAINER_PRIORITY: a container without it counts as 0; the higher value starts first. A pod created
// with only generateName is named by the webhook, and its barrier is named after it.
func TestEnvPrioritiesWithGenerateName(t *testing.T) {
	h := newHarness(t)
	h.serveWebhook(admissionregistrationv1.Fail)
	h.startController()

	in := h.pod("", nil, map[string]string{"b": "10"}, "a", "b")
	in.GenerateName = "gen-"
	p, err := h.create(in)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(p.Name, "gen-"))
	assert.Equal(t, []string{p.Name + "-barrier/p_0", p.Name + "-barrier/p_10"}, barrierEnv(p))
	h.waitKeys(p.Name, "p_10")
	h.setReady(p.Name, map[string]bool{"a": false, "b": true})
	h.waitKeys(p.Name, "p_10", "p_0")
}

// The API server calls the webhook only for pods with the annotation or the env: none for any other pod.
func TestWebhookCalledOnlyForLaunchPriorityPods(t *testing.T) {
	h := newHarness(t)
	h.serveWebhook(admissionregistrationv1.Fail)

	for i, p := range []*corev1.Pod{
		h.pod("plain-1", nil, nil, "a"),
		h.pod("plain-2", nil, nil, "a", "b"),
		h.pod("plain-3", map[string]string{"other": "x"}, nil, "a", "b"),
	} {
		_, err := h.create(p)
		require.NoError(t, err, "pod %d", i)
	}
	assert.Zero(t, h.wh.Requests(webhook.HandlerName), "no call for pods without launch priority")

	_, err := h.create(h.pod("ordered", ordered, nil, "a", "b"))
	require.NoError(t, err)
	_, err = h.create(h.pod("env", nil, map[string]string{"a": "1"}, "a", "b"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, h.wh.Requests(webhook.HandlerName), 2.0)
}

// Bad input is refused at admission with a message naming the field.
func TestBadInputRefused(t *testing.T) {
	h := newHarness(t)
	h.serveWebhook(admissionregistrationv1.Fail)
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		msg  string
	}{
		{"unknown annotation value", h.pod("bad-annotation", map[string]string{"apps.kruise.io/container-launch-priority": "Random"}, nil, "a", "b"),
			`metadata.annotations[apps.kruise.io/container-launch-priority]: Unsupported value: "Random": supported values: "Ordered"`},
		{"non-integer priority", h.pod("bad-env", nil, map[string]string{"b": "high"}, "a", "b"),
			`spec.containers[1].env[0].value: Invalid value: "high": KRUISE_CONTAINER_PRIORITY must be an integer`},
		{"priority out of range", h.pod("bad-range", nil, map[string]string{"a": "2147483648"}, "a", "b"),
			`spec.containers[0].env[0].value: Invalid value: "2147483648": KRUISE_CONTAINER_PRIORITY must be in [-2147483647, 2147483647]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.create(tc.pod)
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// Webhook down, failurePolicy Ignore: the pod is created without the barrier and the controller reports it
// (Warning event and condition ContainerLaunchBarrier=False), once.
func TestWebhookDownIgnoreReported(t *testing.T) {
	h := newHarness(t)
	h.downWebhook(admissionregistrationv1.Ignore)
	h.startController()

	p, err := h.create(h.pod("unordered", ordered, nil, "a", "b"))
	require.NoError(t, err)
	assert.Equal(t, []string{"", ""}, barrierEnv(p))
	ev := h.WaitEvent("unordered", controller.ReasonNotInjected)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	testenv.Eventually(t, timeout, func() (bool, error) {
		got, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), "unordered", metav1.GetOptions{})
		return err == nil && testenv.ConditionStatus(got, controller.ConditionType) == corev1.ConditionFalse, err
	})
	assert.Nil(t, h.barrier("unordered"))
}

// Webhook down, failurePolicy Fail: only pods asking for launch priorities are refused.
func TestWebhookDownFailBlocksOnlyLaunchPriorityPods(t *testing.T) {
	h := newHarness(t)
	h.downWebhook(admissionregistrationv1.Fail)

	_, err := h.create(h.pod("ordered", ordered, nil, "a", "b"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failed calling webhook")
	_, err = h.create(h.pod("env", nil, map[string]string{"b": "1"}, "a", "b"))
	require.Error(t, err)
	_, err = h.create(h.pod("plain", nil, nil, "a", "b"))
	require.NoError(t, err, "a pod without launch priority never waits on the webhook")
}
