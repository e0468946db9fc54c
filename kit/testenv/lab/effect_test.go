package lab_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A configuration installed through the lab is in effect when Install returns: the very next request it concerns
// is admitted through it. Each round installs a configuration whose webhook is down (failurePolicy Fail) for
// ConfigMaps with the round's label and at once dry-runs such a ConfigMap, which must be refused. Without the wait
// (Install returning after its create) about half of the runs here failed in some round: the API server's informer
// had not read the configuration yet, and the create was allowed.
func TestInstallReturnsOnceInEffect(t *testing.T) {
	l := lab.New(t, 30*time.Second)
	url := "https://127.0.0.1:1/down"
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	for round := range 20 {
		label := map[string]string{"lab-effect-round": fmt.Sprint(round)}
		name := fmt.Sprintf("lab-effect-%s-%d", l.NS, round)
		hook := admissionregistrationv1.ValidatingWebhook{
			Name: fmt.Sprintf("round-%d.lab-effect.flotilla.test", round), ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ObjectSelector:    &metav1.LabelSelector{MatchLabels: label},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": l.NS}},
		}
		l.InstallValidating(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{hook}})

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: l.NS, Labels: label}}
		_, err := l.Env.Kube.CoreV1().ConfigMaps(l.NS).Create(context.Background(), cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.Error(t, err, "round %d: admitted without the configuration just installed", round)
		require.True(t, strings.Contains(err.Error(), hook.Name), "round %d: refused by something else: %v", round, err)
	}
}
