// Package fleet tests the controller binaries as an operator runs them: built from source, started as
// processes against the local control plane under the ServiceAccounts and RBAC that deploy/ installs.
package fleet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var controllers = []string{"cloneset", "statefulset", "daemonset", "sidecarset", "pub", "probe", "cronjob", "resourcedistribution", "uniteddeployment", "launchpriority", "persistentpodstate", "workloadspread", "containerrecreate", "imagepulljob"}

// Every binary must start, win its Lease, report healthy and ready, serve Prometheus metrics including
// client-go's, and either start its reconcilers or say in its log that it has none yet.
func TestEveryControllerStartsLeadsAndServes(t *testing.T) {
	env := testenv.Get(t)
	f := newFleet(t, env)
	procs := map[string]*framework.Process{}
	for _, c := range controllers {
		var extra []string
		switch c {
		case "resourcedistribution":
			// The binary keeps OpenKruise's default (gate off: nothing runs); its overlay turns the gate on.
			extra = []string{"--feature-gates=ResourceDistributionGate=true"}
		case "containerrecreate":
			// As its overlay: OpenKruise registers the controller only with KruiseDaemon (a node agent does the work).
			extra = []string{"--feature-gates=KruiseDaemon=true"}
		case "imagepulljob":
			// As its overlay, KruiseDaemon; and a node selector no node matches: its NodeImage reconciler is
			// cluster-wide, and the nodes of tests running beside this one are none of its business.
			extra = []string{"--feature-gates=KruiseDaemon=true", "--node-selector=flotilla.dev/fleet-test=no-node"}
		}
		if c == "pub" || c == "daemonset" || c == "launchpriority" || c == "persistentpodstate" || c == "workloadspread" {
			// Its webhook (pub: the guard; daemonset: DaemonSet conversion; launchpriority: the pod barrier; persistentpodstate:
			// the recorded topology; workloadspread: the pod subset) on a free port: sidecarset-controller
			// holds the default one.
			extra = []string{"--webhook-host=127.0.0.1", "--webhook-port=0"}
		}
		procs[c] = f.start(t, c, extra...)
	}
	for _, c := range controllers {
		p := procs[c]
		t.Run(c, func(t *testing.T) {
			testenv.Eventually(t, time.Minute, func() (bool, error) { return p.Status("/healthz") == 200, nil })
			testenv.Eventually(t, time.Minute, func() (bool, error) { return p.Status("/readyz") == 200, nil })
			testenv.Eventually(t, time.Minute, func() (bool, error) {
				holder, err := f.leaseHolder(c)
				return holder != "", err
			})
			metrics := p.Metrics(t)
			require.Contains(t, metrics, "rest_client_requests_total", "client-go REST metrics are exported")
			// Every binary runs its reconcilers: its workers start, and it does not claim to idle (probe-controller,
			// with its default KruiseDaemon=false, runs the one that refuses PodProbeMarkers visibly).
			testenv.Eventually(t, 30*time.Second, func() (bool, error) {
				return strings.Contains(p.Log(), "Starting workers"), nil
			})
			require.NotContains(t, strings.ToLower(p.Log()), "no reconciler is enabled")
			require.True(t, p.Running(), "process exited; log:\n%s", p.Log())
		})
	}
}

// A second replica waits as a warm standby: healthy but not ready, because its informers start only once it
// leads. When the leader stops, the standby takes the Lease over and becomes ready.
func TestStandbyTakesOverWhenLeaderStops(t *testing.T) {
	env := testenv.Get(t)
	f := newFleet(t, env)
	fast := []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}
	a := f.start(t, "cloneset", fast...)
	testenv.Eventually(t, time.Minute, func() (bool, error) { return a.Status("/readyz") == 200, nil })
	first, err := f.leaseHolder("cloneset")
	require.NoError(t, err)
	require.NotEmpty(t, first)

	b := f.start(t, "cloneset", fast...)
	testenv.Eventually(t, time.Minute, func() (bool, error) { return b.Status("/healthz") == 200, nil })
	// The standby must stay unready while a holds the Lease: watch it over several retry periods.
	testenv.Consistently(t, 3*time.Second, func() error {
		if code := b.Status("/readyz"); code == 200 {
			return fmt.Errorf("standby reports ready while another instance leads")
		}
		holder, err := f.leaseHolder("cloneset")
		if err == nil && holder != first {
			err = fmt.Errorf("lease moved from %q to %q while the leader was healthy", first, holder)
		}
		return err
	})

	a.Stop(t)
	testenv.Eventually(t, 30*time.Second, func() (bool, error) { return b.Status("/readyz") == 200, nil })
	holder, err := f.leaseHolder("cloneset")
	require.NoError(t, err)
	require.NotEqual(t, first, holder, "the standby holds the Lease now")
}

// The RBAC in deploy/ grants each controller what its workload needs and nothing broad: spot-check a few
// permissions through the controllers' own tokens.
func TestControllerRBACIsLeastPrivilege(t *testing.T) {
	env := testenv.Get(t)
	f := newFleet(t, env)
	cases := []struct {
		controller string
		attrs      authorizationv1.ResourceAttributes
		allowed    bool
	}{
		{"cloneset", authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "default"}, true},
		{"cloneset", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "clonesets", Subresource: "status", Namespace: "default"}, true},
		{"cloneset", authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: "default"}, false},
		{"cloneset", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "statefulsets", Namespace: "default"}, false},
		{"statefulset", authorizationv1.ResourceAttributes{Verb: "create", Resource: "persistentvolumeclaims", Namespace: "default"}, true},
		{"statefulset", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "nodes"}, false},
		{"daemonset", authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}, true},
		{"daemonset", authorizationv1.ResourceAttributes{Verb: "update", Resource: "nodes"}, false},
		// The conversion webhooks (issue 23): each controller patches its own CRD's stanza, by name, nothing else.
		{"daemonset", authorizationv1.ResourceAttributes{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "daemonsets.apps.kruise.io"}, true},
		{"daemonset", authorizationv1.ResourceAttributes{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "sidecarsets.apps.kruise.io"}, false},
		{"daemonset", authorizationv1.ResourceAttributes{Verb: "update", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "daemonsets.apps.kruise.io"}, false},
		{"daemonset", authorizationv1.ResourceAttributes{Verb: "list", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, false},
		{"daemonset", authorizationv1.ResourceAttributes{Verb: "update", Resource: "secrets", Name: "daemonset-controller-webhook-certs", Namespace: framework.SystemNamespace}, true},
		{"daemonset", authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Name: "sidecarset-controller-webhook-certs", Namespace: framework.SystemNamespace}, false},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "sidecarsets.apps.kruise.io"}, true},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "daemonsets.apps.kruise.io"}, false},
		{"cronjob", authorizationv1.ResourceAttributes{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "advancedcronjobs.apps.kruise.io"}, false},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "default"}, false},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Namespace: "default"}, true},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "update", Resource: "pods", Namespace: "default"}, false},
		// The webhook: its own configurations and certificate Secret, by name, nothing else.
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "flotilla-sidecarset"}, true},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "flotilla-sidecarset"}, true},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "flotilla-pub"}, false},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "list", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}, false},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "update", Resource: "secrets", Name: "sidecarset-controller-webhook-certs", Namespace: framework.SystemNamespace}, true},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Name: "other", Namespace: framework.SystemNamespace}, false},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: framework.SystemNamespace}, false},
		{"pub", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods", Namespace: "default"}, false},
		// Own kinds: status only (issue 26 item 12).
		{"pub", authorizationv1.ResourceAttributes{Verb: "update", Group: "policy.kruise.io", Resource: "podunavailablebudgets", Namespace: "default"}, false},
		{"pub", authorizationv1.ResourceAttributes{Verb: "update", Group: "policy.kruise.io", Resource: "podunavailablebudgets", Subresource: "status", Namespace: "default"}, true},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "patch", Group: "apps.kruise.io", Resource: "sidecarsets"}, false},
		{"sidecarset", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "sidecarsets", Subresource: "status"}, true},
		// /scale of any workload, read only; not the workloads themselves.
		{"pub", authorizationv1.ResourceAttributes{Verb: "get", Group: "example.com", Resource: "widgets", Subresource: "scale", Namespace: "default"}, true},
		{"pub", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "clonesets", Subresource: "scale", Namespace: "default"}, false},
		{"pub", authorizationv1.ResourceAttributes{Verb: "get", Group: "apps.kruise.io", Resource: "clonesets", Namespace: "default"}, false},
		{"pub", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "flotilla-pub"}, true},
		{"pub", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "flotilla-sidecarset"}, false},
		{"probe", authorizationv1.ResourceAttributes{Verb: "create", Group: "apps.kruise.io", Resource: "nodepodprobes"}, true},
		{"probe", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods", Namespace: "default"}, false},
		{"probe", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Subresource: "status", Namespace: "default"}, true},
		{"probe", authorizationv1.ResourceAttributes{Verb: "update", Resource: "pods", Subresource: "status", Namespace: "default"}, false},
		{"probe", authorizationv1.ResourceAttributes{Verb: "update", Resource: "pods", Namespace: "default"}, false},
		{"probe", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "nodepodprobes", Subresource: "status"}, false},
		{"cronjob", authorizationv1.ResourceAttributes{Verb: "create", Group: "batch", Resource: "jobs", Namespace: "default"}, true},
		{"cronjob", authorizationv1.ResourceAttributes{Verb: "create", Group: "apps.kruise.io", Resource: "clonesets", Namespace: "default"}, false},
		{"cronjob", authorizationv1.ResourceAttributes{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Name: "cloneset-controller", Namespace: f.ns}, false},
		// UnitedDeployment: writes its subset workloads and its own status, reads pods, never writes them.
		{"uniteddeployment", authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "default"}, true},
		{"uniteddeployment", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "clonesets", Namespace: "default"}, true},
		{"uniteddeployment", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "uniteddeployments", Subresource: "status", Namespace: "default"}, true},
		{"uniteddeployment", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "uniteddeployments", Namespace: "default"}, false},
		{"uniteddeployment", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods", Namespace: "default"}, false},
		{"uniteddeployment", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "clonesets", Subresource: "status", Namespace: "default"}, false},
		// ResourceDistribution: Secret and ConfigMap writes anywhere (inherent: copies go to any namespace), its
		// own status; never the distributions themselves, never pods.
		{"resourcedistribution", authorizationv1.ResourceAttributes{Verb: "create", Resource: "secrets", Namespace: "default"}, true},
		{"resourcedistribution", authorizationv1.ResourceAttributes{Verb: "update", Resource: "configmaps", Namespace: "default"}, true},
		{"resourcedistribution", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "secrets", Namespace: "default"}, false},
		{"resourcedistribution", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "resourcedistributions", Subresource: "status"}, true},
		{"resourcedistribution", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "resourcedistributions"}, false},
		{"resourcedistribution", authorizationv1.ResourceAttributes{Verb: "update", Resource: "namespaces"}, false},
		{"resourcedistribution", authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "default"}, false},
		// Container launch priority: barrier ConfigMaps created, patched, a stale one deleted; pods patched (the
		// completed annotation) and their status patched (the missing-barrier condition), never updated or deleted.
		{"launchpriority", authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: "default"}, true},
		{"launchpriority", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "configmaps", Namespace: "default"}, true},
		{"launchpriority", authorizationv1.ResourceAttributes{Verb: "update", Resource: "configmaps", Namespace: "default"}, false},
		{"launchpriority", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Namespace: "default"}, true},
		{"launchpriority", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Subresource: "status", Namespace: "default"}, true},
		{"launchpriority", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods", Namespace: "default"}, false},
		{"launchpriority", authorizationv1.ResourceAttributes{Verb: "update", Resource: "pods", Namespace: "default"}, false},
		{"launchpriority", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "flotilla-z-launchpriority"}, true},
		{"launchpriority", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "flotilla-sidecarset"}, false},
		// PersistentPodState: reads pods, nodes and StatefulSets, never writes them; its status, and the objects
		// StatefulSet annotations ask for; its own webhook configuration only.
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "default"}, true},
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Namespace: "default"}, false},
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "default"}, false},
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}, true},
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "update", Resource: "nodes"}, false},
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps", Resource: "statefulsets", Namespace: "default"}, false},
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "list", Group: "apps.kruise.io", Resource: "statefulsets", Namespace: "default"}, true},
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "create", Group: "apps.kruise.io", Resource: "persistentpodstates", Namespace: "default"}, true},
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "persistentpodstates", Subresource: "status", Namespace: "default"}, true},
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "flotilla-persistentpodstate"}, true},
		{"persistentpodstate", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "flotilla-sidecarset"}, false},
		// WorkloadSpread: pods patched (deletion cost) and deleted (Adaptive rescheduling), never created or updated;
		// the targets read, never written; its status only; its own webhook configurations only.
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Namespace: "default"}, true},
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods", Namespace: "default"}, true},
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "default"}, false},
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "update", Resource: "pods", Namespace: "default"}, false},
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "list", Group: "apps", Resource: "deployments", Namespace: "default"}, true},
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps", Resource: "deployments", Namespace: "default"}, false},
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "workloadspreads", Subresource: "status", Namespace: "default"}, true},
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "workloadspreads", Namespace: "default"}, false},
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "flotilla-workloadspread"}, true},
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "flotilla-workloadspread"}, true},
		{"workloadspread", authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "flotilla-sidecarset"}, false},
		// ContainerRecreateRequest manager: its requests and their status; pods read, their status patched
		// (KruisePodReady for unreadyGracePeriodSeconds), never written otherwise: the node agent recreates.
		{"containerrecreate", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "containerrecreaterequests", Subresource: "status", Namespace: "default"}, true},
		{"containerrecreate", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Subresource: "status", Namespace: "default"}, true},
		{"containerrecreate", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Namespace: "default"}, false},
		{"containerrecreate", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods", Namespace: "default"}, false},
		{"containerrecreate", authorizationv1.ResourceAttributes{Verb: "create", Group: "apps.kruise.io", Resource: "containerrecreaterequests", Namespace: "default"}, false},
		// ImagePullJob manager: NodeImages (one per node), jobs' status; nodes and pods read only; pull secrets read
		// where they are, copies written only in the agent's namespace.
		{"imagepulljob", authorizationv1.ResourceAttributes{Verb: "create", Group: "apps.kruise.io", Resource: "nodeimages"}, true},
		{"imagepulljob", authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "imagepulljobs", Subresource: "status", Namespace: "default"}, true},
		{"imagepulljob", authorizationv1.ResourceAttributes{Verb: "create", Group: "apps.kruise.io", Resource: "imagepulljobs", Namespace: "default"}, false},
		{"imagepulljob", authorizationv1.ResourceAttributes{Verb: "update", Resource: "nodes"}, false},
		{"imagepulljob", authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "default"}, true},
		{"imagepulljob", authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: "default"}, false},
		{"imagepulljob", authorizationv1.ResourceAttributes{Verb: "create", Resource: "secrets", Namespace: "default"}, false},
		{"imagepulljob", authorizationv1.ResourceAttributes{Verb: "create", Resource: "secrets", Namespace: "flotilla-node"}, true},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s %s %s/%s", tc.controller, tc.attrs.Verb, tc.attrs.Resource, tc.attrs.Subresource)
		t.Run(name, func(t *testing.T) {
			kube := f.clientAs(t, tc.controller)
			review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &tc.attrs}},
				metav1.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, tc.allowed, review.Status.Allowed, "reason: %s", review.Status.Reason)
		})
	}
}

// probe-controller with PodProbeMarkerGate off (its default: KruiseDaemon=false, no node agent) does not accept a
// PodProbeMarker in silence: the marker gets a Warning event naming the gate, and nothing else is written to it.
// With the gates deploy/overlays/probe ships (KruiseDaemon=true) it reconciles the marker instead.
func TestPodProbeMarkerRefusedWhileGateOff(t *testing.T) {
	env := testenv.Get(t)
	f := newFleet(t, env)
	client := versioned.NewForConfigOrDie(env.Config)
	marker := func(name string) *appsv1alpha1.PodProbeMarker {
		return &appsv1alpha1.PodProbeMarker{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
			Spec: appsv1alpha1.PodProbeMarkerSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "game-server"}},
				Probes: []appsv1alpha1.PodContainerProbe{{Name: "Idle", ContainerName: "game-server", PodConditionType: "game.io/idle",
					Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}},
			},
		}
	}
	p := f.start(t, "probe")
	_, err := client.AppsV1alpha1().PodProbeMarkers(f.ns).Create(context.Background(), marker("off"), metav1.CreateOptions{})
	require.NoError(t, err)
	var warning string
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		for _, e := range env.Events(t, f.ns, "off") {
			if e.Type == corev1.EventTypeWarning && e.Reason == "PodProbeMarkerDisabled" {
				warning = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	assert.Contains(t, warning, "KruiseDaemon=false", "the event names the gate")
	var got *appsv1alpha1.PodProbeMarker
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		m, err := client.AppsV1alpha1().PodProbeMarkers(f.ns).Get(context.Background(), "off", metav1.GetOptions{})
		got = m
		return err == nil && meta.IsStatusConditionFalse(m.Status.Conditions, appsv1alpha1.PodProbeMarkerEnabled), err
	})
	cond := meta.FindStatusCondition(got.Status.Conditions, appsv1alpha1.PodProbeMarkerEnabled)
	assert.Equal(t, "PodProbeMarkerDisabled", cond.Reason)
	assert.Contains(t, cond.Message, "KruiseDaemon=false", "the condition names the gate")
	assert.Empty(t, got.Finalizers, "a refused marker gets no finalizer: nothing would ever remove it")
	assert.Zero(t, got.Status.ObservedGeneration, "a refused marker claims no reconciliation")
	p.Stop(t)

	f.start(t, "probe", "--feature-gates=KruiseDaemon=true")
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		m, err := client.AppsV1alpha1().PodProbeMarkers(f.ns).Get(context.Background(), "off", metav1.GetOptions{})
		got = m
		return err == nil && m.Status.ObservedGeneration == m.Generation, err
	})
	assert.Empty(t, got.Status.Conditions, "the reconciler drops the refusal once it runs")
	// The running controller has put its finalizer on the marker: delete it while the controller still runs to
	// release it, or the test's namespace would stay Terminating once the process stops.
	require.NoError(t, client.AppsV1alpha1().PodProbeMarkers(f.ns).Delete(context.Background(), "off", metav1.DeleteOptions{}))
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		_, err := client.AppsV1alpha1().PodProbeMarkers(f.ns).Get(context.Background(), "off", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
