package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const nodeNameKey = "authentication.kubernetes.io/node-name"

// A probe-agent writes the status of its own node's NodePodProbe only: the
// node its token is bound to (the user's node-name extra); another node's, or
// any with a token bound to no node, is refused.
func TestAgentWritesOnlyItsNodesNodePodProbe(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2)
	h.Env.ApplyPolicies(t, "deploy/components/probe/policy.yaml")
	for _, n := range nodes {
		_, err := h.Client.AppsV1alpha1().NodePodProbes().Create(context.Background(), &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	const agent = "system:serviceaccount:flotilla-node:probe-agent"
	write := func(cfg *rest.Config, node string) error {
		c := versioned.NewForConfigOrDie(cfg)
		npp, err := c.AppsV1alpha1().NodePodProbes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		npp.Status.PodProbeStatuses = []appsv1alpha1.PodProbeStatus{{Name: "p", Namespace: h.NS, UID: "u-" + time.Now().String()}}
		_, err = c.AppsV1alpha1().NodePodProbes().UpdateStatus(context.Background(), npp, metav1.UpdateOptions{})
		return err
	}
	agentOf0 := h.Env.ActingAs(agent, map[string][]string{nodeNameKey: {nodes[0]}})
	testenv.Refused(t, "another node's NodePodProbe", "probe-agent of node "+nodes[0]+" may not write the status of NodePodProbe "+nodes[1],
		func() error { return write(agentOf0, nodes[1]) })
	testenv.Refused(t, "a token bound to no node", "only with a token bound to its pod or node",
		func() error { return write(h.Env.ActingAs(agent, nil), nodes[0]) })
	require.NoError(t, write(agentOf0, nodes[0]), "its own node's NodePodProbe")
	// Another identity is not concerned (the controller, an admin).
	require.NoError(t, write(h.Env.Config, nodes[1]))

	// The claim the policy reads is what the API server puts into a token
	// bound to a Node object (hack/run-local.sh's agents) ...
	sa := "default"
	tr, err := h.Env.Kube.CoreV1().ServiceAccounts(h.NS).CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: nodes[0], UID: nodeUID(t, h.Env.Kube, nodes[0])},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rev, err := h.Env.Kube.AuthenticationV1().TokenReviews().Create(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, rev.Status.Authenticated, rev.Status.Error)
	require.Equal(t, authenticationv1.ExtraValue{nodes[0]}, rev.Status.User.Extra[nodeNameKey], "a Node-bound token names its node")
	// ... and into a pod-bound one (the DaemonSet's projected token).
	pod := h.pod("agent-stand-in", nodes[0])
	tr, err = h.Env.Kube.CoreV1().ServiceAccounts(h.NS).CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rev, err = h.Env.Kube.AuthenticationV1().TokenReviews().Create(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, authenticationv1.ExtraValue{nodes[0]}, rev.Status.User.Extra[nodeNameKey], "a pod-bound token names the pod's node")
}

func nodeUID(t *testing.T, kube kubernetes.Interface, name string) types.UID {
	t.Helper()
	n, err := kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return n.UID
}

// probe-controller's pods/status writes may carry labels, annotations and
// probe conditions only: a Kubernetes-owned condition, another status field
// or a finalizer is refused.
func TestControllerPodStatusWritesArePinned(t *testing.T) {
	h := newHarness(t)
	node := h.nodes(1)[0]
	h.Env.ApplyPolicies(t, "deploy/components/probe/policy.yaml")
	pod := h.pod("game-server-0", node)
	kube := kubernetes.NewForConfigOrDie(h.Env.ActingAs("system:serviceaccount:flotilla-system:probe-controller", nil))
	update := func(mutate func(*corev1.Pod)) error {
		p, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(p)
		// A write the API server admitted before the policy was loaded
		// would make every later attempt a no-op no policy refuses: each
		// attempt also changes an annotation (which the policy allows).
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["flotilla.dev/test-attempt"] = time.Now().Format(time.RFC3339Nano)
		_, err = kube.CoreV1().Pods(h.NS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		return err
	}
	testenv.Refused(t, "the Ready condition", "conditions Kubernetes and Kruise own", func() error {
		return update(func(p *corev1.Pod) {
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == corev1.PodReady {
					p.Status.Conditions[i].Status = corev1.ConditionFalse
				}
			}
		})
	})
	testenv.Refused(t, "the pod IP", "only labels, annotations and probe conditions", func() error {
		return update(func(p *corev1.Pod) { p.Status.PodIP = "10.255.255.254"; p.Status.PodIPs = nil })
	})
	testenv.Refused(t, "a finalizer", "finalizers", func() error {
		return update(func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, "example.com/hold") })
	})
	// What markPod writes: a label, an annotation and the probe's condition.
	require.NoError(t, update(func(p *corev1.Pod) {
		p.Labels[idleLabel] = "true"
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[deletionCost] = "-10"
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: idleCondition, Status: corev1.ConditionTrue, LastProbeTime: metav1.Now()})
	}))
}

// With KruiseDaemon an agent writes ContainerRecreateRequest status too: only of the requests stamped with its
// own node (flotilla-probe-agent-own-node-crr), before and after the write (issue 28).
func TestAgentWritesOnlyItsNodesContainerRecreateRequests(t *testing.T) {
	h := newHarness(t)
	h.Env.ApplyPolicies(t, "deploy/components/probe/policy.yaml")
	crrs := h.Client.AppsV1alpha1().ContainerRecreateRequests(h.NS)
	for _, node := range []string{"node-a", "node-b"} {
		_, err := crrs.Create(context.Background(), &appsv1alpha1.ContainerRecreateRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "on-" + node, Labels: map[string]string{appsv1alpha1.ContainerRecreateRequestNodeNameKey: node}},
			Spec:       appsv1alpha1.ContainerRecreateRequestSpec{PodName: "p", Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "app"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	const agent = "system:serviceaccount:flotilla-node:probe-agent"
	write := func(cfg *rest.Config, name string, mutate func(*appsv1alpha1.ContainerRecreateRequest)) error {
		c := versioned.NewForConfigOrDie(cfg).AppsV1alpha1().ContainerRecreateRequests(h.NS)
		crr, err := c.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		crr.Status.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
		if mutate != nil {
			mutate(crr)
		}
		_, err = c.UpdateStatus(context.Background(), crr, metav1.UpdateOptions{})
		return err
	}
	agentOfA := h.Env.ActingAs(agent, map[string][]string{nodeNameKey: {"node-a"}})
	testenv.Refused(t, "another node's request", "probe-agent of node node-a may not write the status of ContainerRecreateRequest on-node-b",
		func() error { return write(agentOfA, "on-node-b", nil) })
	testenv.Refused(t, "a token bound to no node", "only with a token bound to its pod or node",
		func() error { return write(h.Env.ActingAs(agent, nil), "on-node-a", nil) })
	testenv.Refused(t, "relabelling another node's request as its own", "may not write the status of ContainerRecreateRequest on-node-b",
		func() error {
			return write(agentOfA, "on-node-b", func(c *appsv1alpha1.ContainerRecreateRequest) {
				c.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey] = "node-a"
			})
		})
	require.NoError(t, write(agentOfA, "on-node-a", nil), "its own node's request")
	require.NoError(t, write(h.Env.Config, "on-node-b", nil), "another identity is not concerned")
}

// With InPlaceUpdateEnvFromMetadata an agent patches pods too: only pods bound to its own node, and only their
// apps.kruise.io/runtime-containers-meta annotation (flotilla-probe-agent-own-node-pods, issue 28).
func TestAgentWritesOnlyItsNodesPodsRuntimeMeta(t *testing.T) {
	h := newHarness(t)
	h.Env.ApplyPolicies(t, "deploy/components/probe/policy.yaml")
	for _, node := range []string{"node-a", "node-b"} {
		_, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "on-" + node, Labels: map[string]string{"version": "v1"}, Annotations: map[string]string{"keep": "x"}},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	const agent = "system:serviceaccount:flotilla-node:probe-agent"
	patch := func(cfg *rest.Config, name, body string) error {
		_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(h.NS).Patch(context.Background(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	meta := `{"metadata":{"annotations":{"apps.kruise.io/runtime-containers-meta":"{\"containers\":[]}"}}}`
	agentOfA := h.Env.ActingAs(agent, map[string][]string{nodeNameKey: {"node-a"}})
	testenv.Refused(t, "another node's pod", "probe-agent of node node-a may not write pod on-node-b",
		func() error { return patch(agentOfA, "on-node-b", meta) })
	testenv.Refused(t, "a token bound to no node", "only with a token bound to its pod or node",
		func() error { return patch(h.Env.ActingAs(agent, nil), "on-node-a", meta) })
	for what, body := range map[string]string{
		"a label":            `{"metadata":{"labels":{"version":"v2"}}}`,
		"another annotation": `{"metadata":{"annotations":{"keep":"y"}}}`,
		"removing one":       `{"metadata":{"annotations":{"keep":null}}}`,
		"adding one":         `{"metadata":{"annotations":{"new":"1"}}}`,
		"a finalizer":        `{"metadata":{"finalizers":["x.io/f"]}}`,
		"the spec":           `{"spec":{"activeDeadlineSeconds":100}}`,
	} {
		testenv.Refused(t, what, "may change only the apps.kruise.io/runtime-containers-meta annotation",
			func() error { return patch(agentOfA, "on-node-a", body) })
	}
	require.NoError(t, patch(agentOfA, "on-node-a", meta), "its own node's pod, the annotation only")
	require.NoError(t, patch(h.Env.Config, "on-node-b", `{"metadata":{"labels":{"version":"v2"}}}`), "another identity is not concerned")
}
