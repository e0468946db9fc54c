package lab

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// probeLabel marks the dry-run ConfigMaps AwaitInEffect sends; its value names one probe configuration.
const probeLabel = "flotilla.test/webhook-probe"

// AwaitInEffect returns once the API server admits requests through every configuration of kind written so far
// (created, or updated: a CA bundle injected). The API server reads webhook configurations from an informer, so a
// configuration takes effect a moment after it is written; a test that writes one and at once creates an object
// it concerns may see the API server admit that object without it. A probe configuration of the same kind is
// created after them — one webhook that only ConfigMaps carrying the probe's own label concern, at an address
// nothing listens on, failurePolicy Fail — and dry-run creates of such a ConfigMap are sent until the API server
// refuses one for failing to call it: its informer then holds the probe, hence everything written before it.
// The probe configuration is deleted before AwaitInEffect returns.
func (l *Lab) AwaitInEffect(kind kitwebhook.ConfigKind) {
	l.T.Helper()
	id := "probe-" + rand.String(8)
	hook := id + ".webhook-probe.flotilla.test"
	url := "https://127.0.0.1:1/probe"
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	timeout := int32(2)
	ctx, api := context.Background(), l.Env.Kube.AdmissionregistrationV1()
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{probeLabel: id}}
	meta := metav1.ObjectMeta{Name: "flotilla-test-" + id}
	var err error
	switch kind {
	case kitwebhook.Mutating:
		_, err = api.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta,
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: hook, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
				Rules: rules, FailurePolicy: &fail, ObjectSelector: selector, SideEffects: &none, TimeoutSeconds: &timeout,
				AdmissionReviewVersions: []string{"v1"}}}}, metav1.CreateOptions{})
		defer func() { _ = api.MutatingWebhookConfigurations().Delete(ctx, meta.Name, metav1.DeleteOptions{}) }()
	case kitwebhook.Validating:
		_, err = api.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta,
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: hook, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
				Rules: rules, FailurePolicy: &fail, ObjectSelector: selector, SideEffects: &none, TimeoutSeconds: &timeout,
				AdmissionReviewVersions: []string{"v1"}}}}, metav1.CreateOptions{})
		defer func() { _ = api.ValidatingWebhookConfigurations().Delete(ctx, meta.Name, metav1.DeleteOptions{}) }()
	default:
		err = fmt.Errorf("unknown webhook configuration kind %q", kind)
	}
	if err != nil {
		l.T.Fatalf("lab: create the %s probe configuration: %v", kind, err)
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: l.NS, Labels: map[string]string{probeLabel: id}}}
	testenv.Eventually(l.T, l.Timeout, func() (bool, error) {
		_, err := l.Env.Kube.CoreV1().ConfigMaps(l.NS).Create(ctx, probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), fmt.Sprintf("failed calling webhook %q", hook)), nil
	})
}
