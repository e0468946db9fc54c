package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// createRaw posts a PodProbeMarker as JSON, so that explicit zeros reach
// the API server (the typed client omits them).
func (h *harness) createRaw(name, probe string) error {
	body := fmt.Sprintf(`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"PodProbeMarker","metadata":{"name":%q},
		"spec":{"selector":{"matchLabels":{"app":"game-server"}},"probes":[%s]}}`, name, probe)
	return h.Client.AppsV1alpha1().RESTClient().Post().Namespace(h.NS).Resource("podprobemarkers").
		Body([]byte(body)).Do(context.Background()).Error()
}

// Issue 25 row 10: what OpenKruise's webhook admits and rejects, now in the
// CRD: 0 timings and thresholds are valid; httpGet.scheme must be HTTP or
// HTTPS; a markerPolicy entry needs labels or annotations. Errors name the
// field.
func TestProbeSpecValidationMatchesOpenKruise(t *testing.T) {
	h := newHarness(t)
	const cond = `"podConditionType":"game.io/idle"`
	require.NoError(t, h.createRaw("zeros", `{"name":"Idle","containerName":"game-server",`+cond+`,
		"probe":{"exec":{"command":["true"]},"initialDelaySeconds":0,"timeoutSeconds":0,"periodSeconds":0,"successThreshold":0,"failureThreshold":0}}`),
		"0 timings and thresholds are valid (the agent uses 1)")
	require.NoError(t, h.createRaw("https", `{"name":"Idle","containerName":"game-server",`+cond+`,
		"probe":{"httpGet":{"path":"/idle","port":8080,"scheme":"HTTPS"}}}`))

	rejected := []struct{ name, probe, field string }{
		{"ftp", `{"name":"Idle","containerName":"game-server",` + cond + `,"probe":{"httpGet":{"path":"/idle","port":8080,"scheme":"FTP"}}}`,
			"spec.probes[0].probe.httpGet.scheme"},
		{"no-scheme", `{"name":"Idle","containerName":"game-server",` + cond + `,"probe":{"httpGet":{"path":"/idle","port":8080}}}`,
			"spec.probes[0].probe.httpGet.scheme"},
		{"empty-policy", `{"name":"Idle","containerName":"game-server","probe":{"exec":{"command":["true"]}},"markerPolicy":[{"state":"Succeeded"}]}`,
			"spec.probes[0].markerPolicy[0]"},
		{"negative-timeout", `{"name":"Idle","containerName":"game-server",` + cond + `,"probe":{"exec":{"command":["true"]},"timeoutSeconds":-1}}`,
			"spec.probes[0].probe.timeoutSeconds"},
	}
	for _, r := range rejected {
		err := h.createRaw(r.name, r.probe)
		if assert.Error(t, err, r.name) {
			assert.True(t, strings.Contains(err.Error(), r.field), "%s: error %q does not name %s", r.name, err, r.field)
		}
	}
}

// Issue 25 row 9: a probe state Unknown (an exec probe on an agent without
// a CRI runtime, a probe just (re)started) is, as in OpenKruise, the pod
// condition False with the state's message, and the markers of the probe's
// policies leave the pod.
func TestUnknownProbeStateUnmarksPod(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(1)
	h.start()
	pod := h.pod("game-server-0", nodes[0])
	h.markers.Create(gameServer())
	h.waitNPP(nodes[0], func(n *appsv1alpha1.NodePodProbe) bool { return len(probesOf(n, pod)) == 1 })

	t1 := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	h.setStatus(nodes[0], pod, appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeSucceeded, LastProbeTime: t1, LastTransitionTime: t1})
	h.waitPod(pod.Name, func(p *corev1.Pod) bool { return p.Labels[idleLabel] == "true" })

	t2 := metav1.NewTime(t1.Add(time.Minute))
	const msg = "exec probes need a CRI runtime (--cri-socket)"
	h.setStatus(nodes[0], pod, appsv1alpha1.ContainerProbeState{Name: "game-server-probe#Idle", State: appsv1alpha1.ProbeUnknown, LastProbeTime: t2, LastTransitionTime: t2, Message: msg})
	got := h.waitPod(pod.Name, func(p *corev1.Pod) bool {
		c := condition(p, idleCondition)
		return c != nil && c.Status == corev1.ConditionFalse
	})
	assert.Equal(t, msg, condition(got, idleCondition).Message)
	assert.NotContains(t, got.Labels, idleLabel, "Unknown takes the policy's label off")
	assert.NotContains(t, got.Annotations, deletionCost, "Unknown takes the policy's annotation off")
	assert.Equal(t, "game-server", got.Labels["app"])
}

// Issue 25 row 11 (a deliberate difference, README "Differences from
// OpenKruise"): a NodePodProbe exists only for a node that has probes.
// OpenKruise creates an empty one for every node; kruise-daemon, the only
// OpenKruise component reading it beside kruise-manager's own controllers,
// treats a missing one as "no probes".
func TestNodePodProbeOnlyForNodesWithProbes(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2)
	h.start()
	pod := h.pod("game-server-0", nodes[0])
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: h.NS, Labels: map[string]string{"app": "other"}},
		Spec: corev1.PodSpec{NodeName: nodes[1], Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
			Containers: []corev1.Container{{Name: "main", Image: "registry.local/app:v1"}}},
	}
	h.podAPI.Create(other)
	h.markers.Create(gameServer())
	h.waitNPP(nodes[0], func(n *appsv1alpha1.NodePodProbe) bool { return len(probesOf(n, pod)) == 1 })
	testenv.Consistently(t, 3*time.Second, func() error {
		if _, err := h.Client.AppsV1alpha1().NodePodProbes().Get(context.Background(), nodes[1], metav1.GetOptions{}); err == nil {
			return fmt.Errorf("NodePodProbe created for node %s, which has no probes", nodes[1])
		}
		return nil
	})
}
