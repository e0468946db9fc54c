// Package integration runs container launch priority against the real local control plane: the reconciler
// in-process on the test's namespace, and the pod webhook served in-process and called by the real API server
// through a copy of deploy/components/launchpriority/webhook.yaml's configuration, limited to the test's
// namespace (so that tests run in parallel with each other and with other packages). Pods here are never
// scheduled (a node selector nothing matches): the test plays the kubelet by patching container readiness.
package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/webhook"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const timeout = time.Minute

type harness struct {
	*lab.Lab
	wh *lab.Webhook
}

func newHarness(t *testing.T) *harness { return &harness{Lab: lab.New(t, timeout)} }

// startController runs the reconciler on the test's namespace.
func (h *harness) startController() (stop func()) {
	h.T.Helper()
	d := h.Deps("launchpriority-test", nil)
	c, err := controller.New(d)
	require.NoError(h.T, err)
	return h.Start(c, 2, d)
}

// config returns the component's webhook configuration as the test installs it: named after the test's
// namespace (after the component's, which sets the order among mutating webhooks), limited to it, calling url
// with failurePolicy policy.
func (h *harness) config(url *string, policy admissionregistrationv1.FailurePolicyType) *admissionregistrationv1.MutatingWebhookConfiguration {
	h.T.Helper()
	data, err := os.ReadFile(filepath.Join(h.Env.RepoRoot, "deploy/components/launchpriority/webhook.yaml"))
	require.NoError(h.T, err)
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		require.NoError(h.T, yaml.Unmarshal(doc, &meta))
		if meta.Kind != "MutatingWebhookConfiguration" {
			continue
		}
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		require.NoError(h.T, yaml.UnmarshalStrict(doc, c))
		c.Name = webhook.ConfigName + "-" + h.NS
		for i := range c.Webhooks {
			w := &c.Webhooks[i]
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: url}
			w.FailurePolicy = &policy
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": h.NS}}
		}
		return c
	}
	h.T.Fatal("no MutatingWebhookConfiguration in webhook.yaml")
	return nil
}

// serveWebhook serves the pod webhook in-process behind the component's configuration with failurePolicy
// policy; stop stops the server and leaves the configuration (the webhook is then down).
func (h *harness) serveWebhook(policy admissionregistrationv1.FailurePolicyType) (stop func()) {
	h.T.Helper()
	name := webhook.ConfigName + "-" + h.NS
	h.wh = h.NewWebhook(h.NS, "launchpriority-test", kitwebhook.ConfigRef{Kind: kitwebhook.Mutating, Name: name})
	h.InstallMutating(h.config(h.wh.URL(webhook.Path), policy))
	webhook.Register(h.wh.Server)
	return h.wh.Serve()
}

// downWebhook installs the configuration calling a port nothing listens on: the webhook is down.
func (h *harness) downWebhook(policy admissionregistrationv1.FailurePolicyType) {
	h.T.Helper()
	url := "https://127.0.0.1:1/mutate-pod"
	h.InstallMutating(h.config(&url, policy))
}

// pod is a pod of the test's namespace that is never scheduled, with containers named names (busybox, no
// command: nothing runs them).
func (h *harness) pod(name string, annotations map[string]string, env map[string]string, names ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS, Annotations: annotations},
		Spec:       corev1.PodSpec{NodeSelector: map[string]string{"launchpriority.flotilla.dev/test": "no-such-node"}},
	}
	for _, n := range names {
		c := corev1.Container{Name: n, Image: "busybox"}
		if v, ok := env[n]; ok {
			c.Env = []corev1.EnvVar{{Name: "KRUISE_CONTAINER_PRIORITY", Value: v}}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	return p
}

func (h *harness) create(p *corev1.Pod) (*corev1.Pod, error) {
	return h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), p, metav1.CreateOptions{})
}

// setReady plays the kubelet: the pod's container statuses, ready as given (all running).
func (h *harness) setReady(name string, ready map[string]bool) {
	h.T.Helper()
	var statuses []string
	for n, r := range ready {
		statuses = append(statuses, fmt.Sprintf(`{"name":%q,"ready":%t,"image":"busybox","imageID":"","restartCount":0,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}}`, n, r))
	}
	patch := `{"status":{"phase":"Running","containerStatuses":[`
	for i, s := range statuses {
		if i > 0 {
			patch += ","
		}
		patch += s
	}
	h.Env.PatchPodStatus(h.T, h.NS, name, patch+`]}}`)
}

// barrier returns the pod's barrier ConfigMap (nil when absent).
func (h *harness) barrier(pod string) *corev1.ConfigMap {
	h.T.Helper()
	cm, err := h.Env.Kube.CoreV1().ConfigMaps(h.NS).Get(context.Background(), pod+"-barrier", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return cm
}

// waitKeys waits until the pod's barrier holds exactly keys and returns it.
func (h *harness) waitKeys(pod string, keys ...string) *corev1.ConfigMap {
	h.T.Helper()
	var cm *corev1.ConfigMap
	testenv.Eventually(h.T, h.Timeout, func() (bool, error) {
		cm = h.barrier(pod)
		if cm == nil || len(cm.Data) != len(keys) {
			return false, nil
		}
		for _, k := range keys {
			if _, ok := cm.Data[k]; !ok {
				return false, nil
			}
		}
		return true, nil
	})
	return cm
}
