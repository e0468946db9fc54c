package install

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// TestPerFeatureInstallAndUninstall installs features one by one from their overlays, as README "Installing into a
// cluster" says, and removes them again: each step checks what a user sees (pods, webhooks, budgets) and that
// nothing of another feature is touched.
func TestPerFeatureInstallAndUninstall(t *testing.T) {
	all := newInstaller(t)
	ctx := context.Background()
	all.shared()
	ns := all.env.Namespace(t)
	cs := all.client.AppsV1alpha1().CloneSets(ns)
	pods := all.env.Kube.CoreV1().Pods(ns)

	t.Run("cloneset alone", func(t *testing.T) {
		in := all.on(t)
		in.install("cloneset")
		in.assertAbsent("statefulset", "daemonset", "sidecarset", "pub", "probe", "cronjob", "resourcedistribution", "uniteddeployment", "deletionprotection", "launchpriority", "persistentpodstate", "workloadspread", "containerrecreate", "imagepulljob")
		_, err := cs.Create(ctx, cloneSet("web", 2), metav1.CreateOptions{})
		require.NoError(t, err)
		waitCloneSet(t, in, ns, "web", "2 pods ready", func(s appsv1alpha1.CloneSetStatus) bool {
			return s.ReadyReplicas == 2 && s.UpdatedReadyReplicas == 2
		})
		before := podUIDs(t, in, ns)
		modifyCloneSet(t, in, ns, "web", func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "registry.example/web:v2" })
		waitCloneSet(t, in, ns, "web", "rolled in place", func(s appsv1alpha1.CloneSetStatus) bool {
			return s.ObservedGeneration == 2 && s.UpdatedReadyReplicas == 2 && s.ReadyReplicas == 2
		})
		assert.Equal(t, before, podUIDs(t, in, ns), "an image change rolls in place: the same pods")
	})

	t.Run("pub blocks a delete", func(t *testing.T) {
		in := all.on(t)
		in.install("pub")
		pub := &policyv1alpha1.PodUnavailableBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: policyv1alpha1.PodUnavailableBudgetSpec{
				TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
				MaxUnavailable:  ptr.To(intstr.FromInt32(0)),
			},
		}
		_, err := in.client.PolicyV1alpha1().PodUnavailableBudgets(ns).Create(ctx, pub, metav1.CreateOptions{})
		require.NoError(t, err)
		victim := podNames(t, in, ns)[0]
		// A dry-run delete is decided by the guard without consuming the budget (sideEffects: None): poll with it
		// until the controller has marked the pods and widened its webhook's scope, then delete for real.
		testenv.Eventually(t, time.Minute, func() (bool, error) {
			err := pods.Delete(ctx, victim, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			return err != nil && strings.Contains(err.Error(), "web"), nil
		})
		err = pods.Delete(ctx, victim, metav1.DeleteOptions{})
		require.Error(t, err, "the budget allows no disruption")
		assert.Contains(t, err.Error(), "pub unavailable allowed is negative")
	})

	t.Run("sidecarset injects through its Service", func(t *testing.T) {
		in := all.on(t)
		in.install("sidecarset")
		set := &appsv1alpha1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: "install-" + ns},
			Spec: appsv1alpha1.SidecarSetSpec{
				Namespace:  ns,
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "log-agent"}},
				Containers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "log-agent", Image: "registry.example/log-agent:v1"}}},
			},
		}
		_, err := in.client.AppsV1alpha1().SidecarSets().Create(ctx, set, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = in.client.AppsV1alpha1().SidecarSets().Delete(context.Background(), set.Name, metav1.DeleteOptions{})
		})
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "injected", Namespace: ns, Labels: map[string]string{"inject": "log-agent"}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"type": "kwok"},
				Tolerations:  []corev1.Toleration{testenv.TestNodeToleration()},
				Containers:   []corev1.Container{{Name: "main", Image: "registry.example/web:v1"}},
			},
		}
		// A dry-run create shows what the webhook injects without leaving a pod behind: poll with it until the
		// controller has widened its webhook's scope to the new SidecarSet, then create for real.
		testenv.Eventually(t, time.Minute, func() (bool, error) {
			got, err := pods.Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil && len(got.Spec.Containers) == 2, nil
		})
		created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{"log-agent", "main"}, containerNames(created), "the sidecar is injected at creation, before the app (podInjectPolicy BeforeAppContainer)")
	})

	// The features of issue 30 (features_test.go), each installed on top of cloneset, pub and sidecarset and
	// uninstalled without touching them.
	t.Run("deletionprotection refuses, then uninstalls", func(t *testing.T) { deletionProtection(t, all.on(t)) })
	t.Run("resourcedistribution copies, uninstall keeps them", func(t *testing.T) { resourceDistribution(t, all.on(t)) })
	t.Run("uniteddeployment splits and scales, uninstall keeps it", func(t *testing.T) { unitedDeployment(t, all.on(t)) })
	t.Run("launchpriority orders a pod's containers, then uninstalls", func(t *testing.T) { launchPriority(t, all.on(t)) })
	t.Run("workloadspread spreads a Deployment, then uninstalls", func(t *testing.T) { workloadSpread(t, all.on(t)) })
	t.Run("persistentpodstate brings a recreated pod back to its zone, then uninstalls", func(t *testing.T) { persistentPodState(t, all.on(t)) })
	t.Run("containerrecreate restarts a container in place, then uninstalls", func(t *testing.T) { containerRecreate(t, all.on(t)) })
	t.Run("imagepulljob pulls on the real node, then uninstalls", func(t *testing.T) { imagePullJob(t, all.on(t)) })

	t.Run("leader failover keeps the webhook answering", func(t *testing.T) {
		in := all.on(t)
		in.failover("pub-controller", func() error {
			// The budget of "pub blocks a delete" still allows nothing: an answered call is a refusal naming it;
			// a failed call (no replica answering, failurePolicy Fail) says "failed calling webhook".
			err := pods.Delete(ctx, podNames(t, in, ns)[0], metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil || !strings.Contains(err.Error(), "pub unavailable allowed is negative") {
				return fmt.Errorf("the guard did not answer: %v", err)
			}
			return nil
		})
	})

	t.Run("uninstall pub", func(t *testing.T) {
		in := all.on(t)
		in.uninstall("pub")
		_, err := in.env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "flotilla-pub", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no webhook configuration of pub is left: %v", err)
		_, err = in.env.Kube.CoreV1().Namespaces().Get(ctx, systemNamespace, metav1.GetOptions{})
		require.NoError(t, err, "the namespace stays")
		in.waitAvailable("cloneset-controller")
		in.waitAvailable("sidecarset-controller")
		before := podUIDs(t, in, ns)
		victim := podNames(t, in, ns)[0]
		require.NoError(t, pods.Delete(ctx, victim, metav1.DeleteOptions{}), "pods are deletable once pub is gone")
		testenv.Eventually(t, time.Minute, func() (bool, error) {
			now := podUIDs(t, in, ns)
			return len(now) == 2 && now[victim] == "", nil
		})
		waitCloneSet(t, in, ns, "web", "replaced the deleted pod", func(s appsv1alpha1.CloneSetStatus) bool { return s.ReadyReplicas == 2 })
		assert.NotEqual(t, before, podUIDs(t, in, ns))
	})

	t.Run("uninstall cloneset keeps CRDs and objects", func(t *testing.T) {
		in := all.on(t)
		before := podUIDs(t, in, ns)
		in.uninstall("cloneset")
		_, err := in.env.Kube.AppsV1().Deployments(systemNamespace).Get(ctx, "cloneset-controller", metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "the controller is gone: %v", err)
		_, err = in.env.Dynamic().Resource(crdGVR).Get(ctx, "clonesets.apps.kruise.io", metav1.GetOptions{})
		require.NoError(t, err, "the CRD is kept")
		_, err = cs.Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err, "the CloneSet is kept")
		// Nothing acts on the pods without the controller; a GC of the CloneSet's pods (what a deleted CRD causes)
		// would show within seconds.
		testenv.Consistently(t, 5*time.Second, func() error {
			if got := podUIDs(t, in, ns); fmt.Sprint(got) != fmt.Sprint(before) {
				return fmt.Errorf("pods changed after the uninstall: %v, was %v", got, before)
			}
			return nil
		})
	})

	t.Run("all: every sample reaches its documented state", func(t *testing.T) {
		in := all.on(t)
		in.uninstall("sidecarset")
		in.install("all")
		samples := filepath.Join(in.env.RepoRoot, "deploy", "samples")
		in.run(filepath.Join(in.env.RepoRoot, "hack", "apply-samples.sh"))
		t.Cleanup(func() {
			// The deletion-protection sample refuses deletion (that is what it shows) until its label is removed.
			in.kubectl("label", "-f", filepath.Join(samples, "deletionprotection.yaml"), "policy.kruise.io/delete-protection-")
			in.kubectl("delete", "--ignore-not-found", "--wait=true", "-f", samples)
		})
		// The sample PodProbeMarker selects app=game-server pods: one on the real node, where the agent runs its
		// exec probe through the node's containerd. The image has no /home/game/idle.sh, so the probe fails: the
		// Failed policy's markers show that a probe really ran.
		game := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "game-server-" + ns, Namespace: "default", Labels: map[string]string{"app": "game-server"}},
			Spec: corev1.PodSpec{
				NodeSelector:                  map[string]string{"kubernetes.io/hostname": in.node},
				Tolerations:                   []corev1.Toleration{{Key: realNodeLabel, Operator: corev1.TolerationOpExists}},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "game-server", Image: in.registry + "/flotilla/busybox:v1",
					Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}}},
			},
		}
		podsDefault := in.env.Kube.CoreV1().Pods("default")
		_, err := podsDefault.Create(ctx, game, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = podsDefault.Delete(context.Background(), game.Name, metav1.DeleteOptions{}) })
		in.run(filepath.Join(in.env.RepoRoot, "hack", "check-samples.sh"), "180")
		var marked *corev1.Pod
		testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
			p, err := podsDefault.Get(ctx, game.Name, metav1.GetOptions{})
			marked = p
			return err == nil && p.Labels["gameserver-idle"] == "false", err
		})
		assert.Equal(t, "10", marked.Annotations["controller.kubernetes.io/pod-deletion-cost"], "the Failed policy's annotation")
		assert.Equal(t, corev1.ConditionFalse, testenv.ConditionStatus(marked, "game.io/idle"), "the probe's condition")
	})

	t.Run("remove for good", func(t *testing.T) {
		in := all.on(t)
		// A PodProbeMarker carries probe-controller's finalizer: README's first step deletes the markers while the
		// controller still runs to release it; without that step the CRD's deletion would wait on it forever.
		ppm := &appsv1alpha1.PodProbeMarker{
			ObjectMeta: metav1.ObjectMeta{Name: "leftover", Namespace: ns},
			Spec: appsv1alpha1.PodProbeMarkerSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "game-server"}},
				Probes: []appsv1alpha1.PodContainerProbe{{Name: "Idle", ContainerName: "game-server", PodConditionType: "game.io/idle",
					Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}},
			},
		}
		markers := in.client.AppsV1alpha1().PodProbeMarkers(ns)
		_, err := markers.Create(ctx, ppm, metav1.CreateOptions{})
		require.NoError(t, err)
		testenv.Eventually(t, time.Minute, func() (bool, error) {
			m, err := markers.Get(ctx, ppm.Name, metav1.GetOptions{})
			return err == nil && len(m.Finalizers) > 0, err
		})
		// Whatever happens next, leave the namespace and the CRDs installed for whoever uses the cluster after.
		t.Cleanup(in.shared)

		root := in.env.RepoRoot
		in.kubectl("delete", "podprobemarkers.apps.kruise.io", "--all", "--all-namespaces", "--wait", "--timeout=60s")
		in.kubectl("delete", "-k", in.pinned("all"))
		in.kubectl("delete", "-k", filepath.Join(root, "deploy/overlays/crds"), "--wait", "--timeout=120s")
		in.kubectl("delete", "-k", filepath.Join(root, "deploy/overlays/namespace"), "--wait", "--timeout=120s")
		for _, crd := range []string{"clonesets.apps.kruise.io", "podprobemarkers.apps.kruise.io", "podunavailablebudgets.policy.kruise.io"} {
			_, err := in.env.Dynamic().Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "CRD %s is gone: %v", crd, err)
		}
		_, err = in.env.Kube.CoreV1().Namespaces().Get(ctx, systemNamespace, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "namespace %s is gone: %v", systemNamespace, err)
		testenv.Eventually(t, time.Minute, func() (bool, error) { return len(podUIDs(t, in, ns)) == 0, nil })
	})
}

func containerNames(p *corev1.Pod) []string {
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

func cloneSet(name string, replicas int32) *appsv1alpha1.CloneSet {
	labels := map[string]string{"app": name}
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"type": "kwok"},
					Tolerations:  []corev1.Toleration{testenv.TestNodeToleration()},
					Containers:   []corev1.Container{{Name: "main", Image: "registry.example/web:v1"}},
				},
			},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		},
	}
}

func waitCloneSet(t *testing.T, in *installer, ns, name, what string, cond func(appsv1alpha1.CloneSetStatus) bool) {
	t.Helper()
	var last appsv1alpha1.CloneSetStatus
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		c, err := in.client.AppsV1alpha1().CloneSets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = c.Status
		return cond(c.Status), nil
	})
	t.Logf("CloneSet %s %s: %+v", name, what, last)
}

func modifyCloneSet(t *testing.T, in *installer, ns, name string, mutate func(*appsv1alpha1.CloneSet)) {
	t.Helper()
	client := in.client.AppsV1alpha1().CloneSets(ns)
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		c, err := client.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mutate(c)
		_, err = client.Update(context.Background(), c, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

// podUIDs maps the live (not terminating) pods of the CloneSet web in ns by name to their UID.
func podUIDs(t *testing.T, in *installer, ns string) map[string]string {
	t.Helper()
	list, err := in.env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = string(p.UID)
		}
	}
	return out
}

func podNames(t *testing.T, in *installer, ns string) []string {
	t.Helper()
	var names []string
	for n := range podUIDs(t, in, ns) {
		names = append(names, n)
	}
	require.NotEmpty(t, names)
	return names
}
