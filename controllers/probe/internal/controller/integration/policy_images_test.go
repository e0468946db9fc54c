package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// With ImagePullJobGate an agent writes NodeImage status too: only of the NodeImage named after its own node
// (flotilla-probe-agent-own-node-images, issue 28).
func TestAgentWritesOnlyItsNodesNodeImage(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2)
	h.Env.ApplyPolicies(t, "deploy/components/probe/policy.yaml")
	for _, n := range nodes {
		_, err := h.Client.AppsV1beta1().NodeImages().Create(context.Background(), &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = h.Client.AppsV1beta1().NodeImages().Delete(context.Background(), n, metav1.DeleteOptions{})
		})
	}
	const agent = "system:serviceaccount:flotilla-node:probe-agent"
	write := func(cfg *rest.Config, node string) error {
		c := versioned.NewForConfigOrDie(cfg).AppsV1beta1().NodeImages()
		ni, err := c.Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ni.Status.Desired++
		_, err = c.UpdateStatus(context.Background(), ni, metav1.UpdateOptions{})
		return err
	}
	agentOf0 := h.Env.ActingAs(agent, map[string][]string{nodeNameKey: {nodes[0]}})
	testenv.Refused(t, "another node's NodeImage", "probe-agent of node "+nodes[0]+" may not write the status of NodeImage "+nodes[1],
		func() error { return write(agentOf0, nodes[1]) })
	testenv.Refused(t, "a token bound to no node", "NodeImage status only with a token bound to its pod or node",
		func() error { return write(h.Env.ActingAs(agent, nil), nodes[0]) })
	require.NoError(t, write(agentOf0, nodes[0]), "its own node's NodeImage")
	require.NoError(t, write(h.Env.Config, nodes[1]), "another identity is not concerned")
}
