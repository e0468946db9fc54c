// Package integration runs the real UnitedDeployment reconciler in-process against the local control plane
// (kit/testenv), one namespace per test. Deployment and StatefulSet subsets are run by the control plane's
// kube-controller-manager and their pods by kwok on nodes each test creates, so the status is what a user sees.
package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/uniteddeployment/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// waitTimeout bounds every poll: pods need the scheduler, kwok and kube-controller-manager.
const waitTimeout = 90 * time.Second

// zoneKey is the node label the tests' subsets select on: the test's own nodes carry it, the shared ones do not.
const zoneKey = "flotilla.dev/ud-test-zone"

type harness struct {
	*lab.Lab
	uds *testenv.Objects[*appsv1alpha1.UnitedDeployment]
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{Lab: lab.New(t, waitTimeout)}
	h.uds = testenv.ObjectsOf(t, h.Client.AppsV1alpha1().UnitedDeployments(h.NS), waitTimeout)
	h.uds.Describe = func(ud *appsv1alpha1.UnitedDeployment) string {
		b, _ := json.Marshal(ud.Status)
		return string(b)
	}
	return h
}

// startController runs the reconciler over informers limited to the test's namespace; the returned function stops
// it and waits until it has (also done at cleanup).
func (h *harness) startController() (stop func()) {
	h.T.Helper()
	d := h.Deps("uniteddeployment-test", nil)
	sub := controller.NewSubsetInformers(h.Env.Kube, h.Client, h.NS)
	c, err := controller.New(d, sub, nil)
	require.NoError(h.T, err)
	return testenv.StartController(h.T, c, 2, d.KubeInformers, d.Informers, sub.Kube, sub.Flotilla)
}

// zoneNodes creates n kwok nodes in the test's zone (zoneKey=<namespace>-<zone>) and returns their names. The
// zone values are the test's own: tests running in parallel tolerate each other's node taint.
func (h *harness) zoneNodes(zone string, n int) []string {
	return h.Env.KwokNodes(h.T, h.NS, n, map[string]string{zoneKey: h.NS + "-" + zone})
}

// zoneSubset is a subset placed in the test's zone.
func (h *harness) zoneSubset(name, zone string, replicas *intstr.IntOrString) appsv1alpha1.Subset {
	return appsv1alpha1.Subset{
		Name:     name,
		Replicas: replicas,
		NodeSelectorTerm: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: zoneKey, Operator: corev1.NodeSelectorOpIn, Values: []string{h.NS + "-" + zone}},
		}},
	}
}

// podTemplate runs one container on the test's nodes (their taint tolerated).
func podTemplate(name, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "main", Image: image}},
			Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
		},
	}
}

// deploymentUD is a UnitedDeployment of Deployments named name with replicas over subsets.
func deploymentUD(name string, replicas int32, subsets ...appsv1alpha1.Subset) *appsv1alpha1.UnitedDeployment {
	return &appsv1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: appsv1alpha1.SubsetTemplate{DeploymentTemplate: &appsv1alpha1.DeploymentTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "team": "web"}},
				Spec:       appsv1.DeploymentSpec{Template: podTemplate(name, "registry.local/web:v1")},
			}},
			Topology: appsv1alpha1.Topology{Subsets: subsets},
		},
	}
}

// deployments returns the live Deployments of the namespace controlled by ud, by subset name; it fails the test on
// two for one subset.
func (h *harness) deployments(ud *appsv1alpha1.UnitedDeployment) map[string]appsv1.Deployment {
	h.T.Helper()
	list, err := h.Env.Kube.AppsV1().Deployments(h.NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(h.T, err)
	out := map[string]appsv1.Deployment{}
	for _, d := range testenv.Live(list.Items) {
		if ref := metav1.GetControllerOf(&d); ref == nil || ref.UID != ud.UID {
			continue
		}
		name := d.Labels[appsv1alpha1.SubSetNameLabelKey]
		if prev, dup := out[name]; dup {
			h.T.Fatalf("two Deployments for subset %s: %s and %s", name, prev.Name, d.Name)
		}
		out[name] = d
	}
	return out
}

// waitDeployments polls until cond holds for ud's Deployments.
func (h *harness) waitDeployments(ud *appsv1alpha1.UnitedDeployment, what string, cond func(map[string]appsv1.Deployment) bool) map[string]appsv1.Deployment {
	h.T.Helper()
	var last map[string]appsv1.Deployment
	testenv.Eventually(h.T, h.Timeout, func() (bool, error) {
		last = h.deployments(ud)
		return cond(last), nil
	})
	return last
}

func replicasOf(deps map[string]appsv1.Deployment) map[string]int32 {
	out := map[string]int32{}
	for name, d := range deps {
		out[name] = ptr.Deref(d.Spec.Replicas, -1)
	}
	return out
}

func condition(ud *appsv1alpha1.UnitedDeployment, t appsv1alpha1.UnitedDeploymentConditionType) *appsv1alpha1.UnitedDeploymentCondition {
	i := slices.IndexFunc(ud.Status.Conditions, func(c appsv1alpha1.UnitedDeploymentCondition) bool { return c.Type == t })
	if i < 0 {
		return nil
	}
	return &ud.Status.Conditions[i]
}

// settled: the status is of the current generation, every pod is updated and ready, and the rollout is done.
func settled(replicas int32) func(*appsv1alpha1.UnitedDeployment) bool {
	return func(ud *appsv1alpha1.UnitedDeployment) bool {
		st := ud.Status
		return st.ObservedGeneration == ud.Generation && st.Replicas == replicas && st.ReadyReplicas == replicas &&
			st.UpdatedReplicas == replicas && st.UpdatedReadyReplicas == replicas &&
			st.UpdateStatus != nil && st.CurrentRevision == st.UpdateStatus.UpdatedRevision
	}
}

func describe(v any) string { b, _ := json.Marshal(v); return fmt.Sprintf("%s", b) }
