package realnode

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// startNodeAgent runs the built probe-agent for node as its ServiceAccount (a token bound to the node, which the
// agent's admission policies require), with gates and the node's CRI endpoint, and waits until it is ready.
func startNodeAgent(t *testing.T, env *testenv.Env, node, endpoint, gates string) *framework.Process {
	t.Helper()
	agent := framework.Start(t, framework.CommandBinary(t, env, "probe", "probe-agent"),
		"--kubeconfig="+framework.AgentKubeconfig(t, env, node), "--feature-gates="+gates,
		"--node-name="+node, "--cri-socket="+endpoint, "--log-format=console")
	testenv.Eventually(t, time.Minute, func() (bool, error) { return agent.Status("/readyz") == 200 || !agent.Running(), nil })
	require.True(t, agent.Running(), "probe-agent exited:\n%s", agent.Log())
	return agent
}

// killAgent kills the agent at once (SIGKILL: no clean-up of any kind).
func killAgent(t *testing.T, agent *framework.Process) {
	t.Helper()
	require.NoError(t, syscall.Kill(agent.PID(), syscall.SIGKILL))
	testenv.Eventually(t, 30*time.Second, func() (bool, error) { return !agent.Running(), nil })
}
