package install

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// The features of issue 30, each installed on top of what TestPerFeatureInstallAndUninstall installed before it and
// uninstalled again, as a user sees them.

const protectionLabel = "policy.kruise.io/delete-protection"

// deletionProtection: the policies hold and the webhook answers through its Service while the feature is installed;
// its uninstall removes the policies, their bindings, the webhook configuration and the Deployment, after which
// labelled objects delete normally; the other features run on, their webhook configurations in place.
func deletionProtection(t *testing.T, in *installer) {
	ctx := context.Background()
	kube := in.env.Kube
	others := in.installed()
	in.install("deletionprotection")

	ns := in.env.Namespace(t)
	namespaces, deps, pods := kube.CoreV1().Namespaces(), kube.AppsV1().Deployments(ns), kube.CoreV1().Pods(ns)
	shape := cloneSet("protected", 0).Spec // the pods of the Deployment and the namespace's active pod: on kwok
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "protected", Labels: map[string]string{protectionLabel: "Always"}},
		Spec:       appsv1.DeploymentSpec{Replicas: shape.Replicas, Selector: shape.Selector, Template: shape.Template},
	}
	_, err := deps.Create(ctx, dep, metav1.CreateOptions{})
	require.NoError(t, err)
	active := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "active", Namespace: ns}, Spec: shape.Template.Spec}
	active.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	_, err = pods.Create(ctx, active, metav1.CreateOptions{})
	require.NoError(t, err)
	// Runs before the namespace's own cleanup (LIFO): protected objects are released first, whatever failed.
	t.Cleanup(func() {
		_, _ = deps.Patch(context.Background(), dep.Name, types.MergePatchType, protection(""), metav1.PatchOptions{})
		_, _ = namespaces.Patch(context.Background(), ns, types.MergePatchType, protection(""), metav1.PatchOptions{})
	})
	dryRun := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	deleteDep := func() error { return deps.Delete(ctx, dep.Name, dryRun) }
	deleteNS := func() error { return namespaces.Delete(ctx, ns, dryRun) }
	allowed := func(what string, del func() error) {
		t.Helper()
		var last error
		testenv.Eventually(t, time.Minute, func() (bool, error) { last = del(); return last == nil, nil })
		t.Logf("%s: allowed", what)
	}

	// Always: decided by the API server's policy (polled: it loads the policy a moment after the apply).
	always := "forbidden by ResourcesProtectionDeletion for " + protectionLabel + "=Always"
	testenv.Refused(t, "Deployment labelled Always", always, deleteDep)
	err = deps.Delete(ctx, dep.Name, metav1.DeleteOptions{})
	require.True(t, apierrors.IsForbidden(err), "a real delete is refused too: %v", err)
	assert.Contains(t, err.Error(), always)

	// Cascading on a namespace: decided by the webhook, called by the API server over TLS through its Service (an
	// unanswered call would be "failed calling webhook", not a 403 naming the webhook).
	cascading := "forbidden by ResourcesProtectionDeletion for " + protectionLabel + "=Cascading and active pods 1>0"
	webhook := `admission webhook "namespaces.deletion-protection.flotilla.dev" denied the request`
	_, err = namespaces.Patch(ctx, ns, types.MergePatchType, protection("Cascading"), metav1.PatchOptions{})
	require.NoError(t, err)
	testenv.Refused(t, "namespace labelled Cascading with an active pod", cascading, deleteNS)
	err = namespaces.Delete(ctx, ns, metav1.DeleteOptions{})
	require.True(t, apierrors.IsForbidden(err), "a real delete is refused too: %v", err)
	assert.Contains(t, err.Error(), webhook)
	assert.Contains(t, err.Error(), cascading)

	// The pod gone: allowed. The pod back: refused. The label removed: allowed.
	require.NoError(t, pods.Delete(ctx, active.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		_, err := pods.Get(ctx, active.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	allowed("Cascading namespace without active pods", deleteNS)
	_, err = pods.Create(ctx, active, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.Refused(t, "the pod back", cascading, deleteNS)
	_, err = namespaces.Patch(ctx, ns, types.MergePatchType, protection(""), metav1.PatchOptions{})
	require.NoError(t, err)
	allowed("namespace with an active pod, label removed", deleteNS)
	_, err = namespaces.Patch(ctx, ns, types.MergePatchType, protection("Cascading"), metav1.PatchOptions{})
	require.NoError(t, err)
	testenv.Refused(t, "labelled again", cascading, deleteNS)

	// Uninstall: the policies, bindings and webhook configuration go with the Deployment.
	in.uninstall("deletionprotection")
	admission := kube.AdmissionregistrationV1()
	gone := map[string]func(string) error{
		"ValidatingAdmissionPolicy": func(n string) error {
			_, err := admission.ValidatingAdmissionPolicies().Get(ctx, n, metav1.GetOptions{})
			return err
		},
		"ValidatingAdmissionPolicyBinding": func(n string) error {
			_, err := admission.ValidatingAdmissionPolicyBindings().Get(ctx, n, metav1.GetOptions{})
			return err
		},
		"ValidatingWebhookConfiguration": func(n string) error {
			_, err := admission.ValidatingWebhookConfigurations().Get(ctx, n, metav1.GetOptions{})
			return err
		},
	}
	for kind, get := range gone {
		names := in.rendered("deletionprotection", kind)
		require.NotEmpty(t, names, "the overlay holds a %s", kind)
		for _, n := range names {
			err := get(n)
			assert.True(t, apierrors.IsNotFound(err), "%s %s is gone: %v", kind, n, err)
		}
	}
	// Labelled objects delete normally (the API server drops a deleted policy a moment after): the Deployment
	// still labelled Always, the namespace still labelled Cascading with its active pod.
	allowed("Always Deployment after the uninstall", deleteDep)
	allowed("Cascading namespace after the uninstall", deleteNS)
	require.NoError(t, deps.Delete(ctx, dep.Name, metav1.DeleteOptions{}))
	require.NoError(t, namespaces.Delete(ctx, ns, metav1.DeleteOptions{}))
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		_, err := namespaces.Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	in.assertKept(others)
}

// resourceDistribution: a ConfigMap distributed into two namespaces; the uninstall removes the controller and keeps
// the CRD, the distribution and its copies.
func resourceDistribution(t *testing.T, in *installer) {
	ctx := context.Background()
	others := in.installed()
	in.install("resourcedistribution")

	a, b := in.env.Namespace(t), in.env.Namespace(t)
	target := map[string]string{"flotilla.dev/install-distribution": a} // this run's namespaces only
	for _, ns := range []string{a, b} {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": target}})
		require.NoError(t, err)
		_, err = in.env.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
	}
	data := map[string]string{"player_initial_lives": "3"}
	raw, err := json.Marshal(&corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "game-demo"},
		Data:       data,
	})
	require.NoError(t, err)
	client := in.client.AppsV1alpha1().ResourceDistributions()
	rds := testenv.ObjectsOf(t, client, 2*time.Minute)
	rd := rds.Create(&appsv1alpha1.ResourceDistribution{
		ObjectMeta: metav1.ObjectMeta{Name: a},
		Spec: appsv1alpha1.ResourceDistributionSpec{
			Resource: runtime.RawExtension{Raw: raw},
			Targets:  appsv1alpha1.ResourceDistributionTargets{NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: target}},
		},
	})
	t.Cleanup(func() { _ = client.Delete(context.Background(), rd.Name, metav1.DeleteOptions{}) })
	rd = rds.WaitFor(rd.Name, "copies in both namespaces", func(r *appsv1alpha1.ResourceDistribution) bool {
		st := r.Status
		return st.ObservedGeneration == r.Generation && st.Desired == 2 && st.Succeeded == 2 && st.Failed == 0
	})
	copies := func() map[string]types.UID {
		out := map[string]types.UID{}
		for _, ns := range []string{a, b} {
			c, err := in.env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "game-demo", metav1.GetOptions{})
			require.NoError(t, err, "the copy in %s", ns)
			assert.Equal(t, data, c.Data)
			assert.Equal(t, rd.Name, c.Annotations[appsv1alpha1.ResourceDistributionSourceAnnotation])
			ref := metav1.GetControllerOf(c)
			require.NotNil(t, ref, "the copy in %s names its distribution", ns)
			assert.Equal(t, rd.UID, ref.UID)
			out[ns] = c.UID
		}
		return out
	}
	before := copies()

	in.uninstall("resourcedistribution")
	_, err = in.env.Dynamic().Resource(crdGVR).Get(ctx, "resourcedistributions.apps.kruise.io", metav1.GetOptions{})
	require.NoError(t, err, "the CRD is kept")
	rds.Get(rd.Name) // the distribution is kept
	// The copies are the users' data: the garbage collector would remove them within seconds if the distribution
	// went.
	testenv.Consistently(t, 5*time.Second, func() error {
		if now := copies(); fmt.Sprint(now) != fmt.Sprint(before) {
			return fmt.Errorf("copies changed after the uninstall: %v, were %v", now, before)
		}
		return nil
	})
	in.assertKept(others)
}

// unitedDeployment: a UnitedDeployment of CloneSets over the kwok zones zone-0 and zone-1 (as the sample; the
// installed cloneset-controller runs the subsets' pods), scaled through /scale; the uninstall keeps it and its
// subsets.
func unitedDeployment(t *testing.T, in *installer) {
	ctx := context.Background()
	others := in.installed()
	in.install("uniteddeployment")

	ns := in.env.Namespace(t)
	template := cloneSet("ud", 0)
	zone := func(z string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}
	}
	uds := testenv.ObjectsOf(t, in.client.AppsV1alpha1().UnitedDeployments(ns), 2*time.Minute)
	ud := uds.Create(&appsv1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "ud"},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To[int32](5),
			Selector: template.Spec.Selector,
			Template: appsv1alpha1.SubsetTemplate{CloneSetTemplate: &appsv1alpha1.CloneSetTemplateSpec{
				ObjectMeta: template.Spec.Template.ObjectMeta,
				Spec:       template.Spec,
			}},
			Topology: appsv1alpha1.Topology{Subsets: []appsv1alpha1.Subset{
				{Name: "zone-0", NodeSelectorTerm: zone("zone-0"), Replicas: ptr.To(intstr.FromString("40%"))},
				{Name: "zone-1", NodeSelectorTerm: zone("zone-1")},
			}},
		},
	})
	// split waits until the subsets' CloneSets have the replicas of want, all ready, and the UnitedDeployment says so.
	split := func(what string, want map[string]int32) map[string]types.UID {
		t.Helper()
		var total int32
		for _, n := range want {
			total += n
		}
		ud = uds.WaitFor(ud.Name, what, func(u *appsv1alpha1.UnitedDeployment) bool {
			st := u.Status
			return st.ObservedGeneration == u.Generation && st.Replicas == total && st.ReadyReplicas == total &&
				fmt.Sprint(st.SubsetReplicas) == fmt.Sprint(want)
		})
		var seen map[string]string
		uids := map[string]types.UID{}
		testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
			list, err := in.client.AppsV1alpha1().CloneSets(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			seen, uids = map[string]string{}, map[string]types.UID{}
			for _, c := range testenv.Live(list.Items) {
				if ref := metav1.GetControllerOf(&c); ref != nil && ref.UID == ud.UID {
					subset := c.Labels[appsv1alpha1.SubSetNameLabelKey]
					seen[subset] = fmt.Sprintf("%d/%d", c.Status.ReadyReplicas, ptr.Deref(c.Spec.Replicas, -1))
					uids[subset] = c.UID
				}
			}
			wantSeen := map[string]string{}
			for s, n := range want {
				wantSeen[s] = fmt.Sprintf("%d/%d", n, n)
			}
			return fmt.Sprint(seen) == fmt.Sprint(wantSeen), nil
		})
		t.Logf("UnitedDeployment %s %s: subset CloneSets ready/replicas %v", ud.Name, what, seen)
		return uids
	}
	split("5 replicas, 40% in zone-0", map[string]int32{"zone-0": 2, "zone-1": 3})
	in.kubectl("scale", "-n", ns, "uniteddeployment/"+ud.Name, "--replicas=7")
	subsets := split("scaled to 7 through /scale", map[string]int32{"zone-0": 3, "zone-1": 4})

	in.uninstall("uniteddeployment")
	kept := uds.Get(ud.Name)
	assert.Equal(t, int32(7), ptr.Deref(kept.Spec.Replicas, -1), "the UnitedDeployment is kept")
	// The subsets stay with their pods: a garbage-collected CloneSet would show within seconds.
	testenv.Consistently(t, 5*time.Second, func() error {
		for subset, uid := range subsets {
			list, err := in.client.AppsV1alpha1().CloneSets(ns).List(ctx, metav1.ListOptions{LabelSelector: appsv1alpha1.SubSetNameLabelKey + "=" + subset})
			if err != nil {
				return err
			}
			if len(list.Items) != 1 || list.Items[0].UID != uid || list.Items[0].DeletionTimestamp != nil {
				return fmt.Errorf("subset %s changed after the uninstall: %d CloneSets", subset, len(list.Items))
			}
		}
		return nil
	})
	in.assertKept(others)
}

// protection is a merge patch setting the deletion-protection label to value ("": removing it).
func protection(value string) []byte {
	v := any(nil)
	if value != "" {
		v = value
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{protectionLabel: v}}})
	return b
}

// installedFeatures is what the features installed so far run and register: their Deployments by name (with
// UID) and Flotilla's webhook configurations.
type installedFeatures struct {
	deployments map[string]types.UID
	webhooks    []string
}

func (in *installer) installed() installedFeatures {
	ctx := context.Background()
	out := installedFeatures{deployments: map[string]types.UID{}}
	deps, err := in.env.Kube.AppsV1().Deployments(systemNamespace).List(ctx, metav1.ListOptions{})
	require.NoError(in.t, err)
	for _, d := range deps.Items {
		out.deployments[d.Name] = d.UID
	}
	admission := in.env.Kube.AdmissionregistrationV1()
	validating, err := admission.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	require.NoError(in.t, err)
	for _, w := range validating.Items {
		if strings.HasPrefix(w.Name, "flotilla-") {
			out.webhooks = append(out.webhooks, "validating/"+w.Name)
		}
	}
	mutating, err := admission.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	require.NoError(in.t, err)
	for _, w := range mutating.Items {
		if strings.HasPrefix(w.Name, "flotilla-") {
			out.webhooks = append(out.webhooks, "mutating/"+w.Name)
		}
	}
	require.NotEmpty(in.t, out.deployments, "features are installed before")
	return out
}

// assertKept checks that every Deployment of before is the same object, available, and every webhook
// configuration of before is still there.
func (in *installer) assertKept(before installedFeatures) {
	now := in.installed()
	for name, uid := range before.deployments {
		assert.Equal(in.t, uid, now.deployments[name], "Deployment %s of another feature is kept", name)
		if now.deployments[name] != "" {
			in.waitAvailable(name)
		}
	}
	assert.Subset(in.t, now.webhooks, before.webhooks, "the webhook configurations of the other features are kept")
}
