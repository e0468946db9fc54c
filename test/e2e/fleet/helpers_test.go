package fleet

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// fleet is one test's view of the controllers: the identities from deploy/overlays/local, and a namespace of
// its own for the leader-election Leases, so tests never compete with controllers started by `make run`.
type fleet struct {
	env *testenv.Env
	ns  string
}

func newFleet(t *testing.T, env *testenv.Env) *fleet {
	t.Helper()
	rendered := framework.InstallLocalOverlay(t, env)
	f := &fleet{env: env, ns: env.Namespace(t)}
	// Grant each controller its leader-election Role (as deploy/ defines it) in this test's namespace.
	for _, obj := range rendered {
		if (obj.GetKind() == "Role" || obj.GetKind() == "RoleBinding") && strings.HasSuffix(obj.GetName(), ":leader-election") {
			c := obj.DeepCopy()
			c.SetNamespace(f.ns)
			require.NoError(t, framework.Apply(context.Background(), env, c))
		}
	}
	return f
}

func (f *fleet) clientAs(t *testing.T, controller string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(framework.ServiceAccountConfig(t, f.env, controller))
}

func (f *fleet) leaseHolder(controller string) (string, error) {
	lease, err := f.env.Kube.CoordinationV1().Leases(f.ns).Get(context.Background(), controller+"-controller", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// start runs the controller under its own ServiceAccount with its Lease in the test's namespace.
func (f *fleet) start(t *testing.T, controller string, extraArgs ...string) *framework.Process {
	t.Helper()
	args := append([]string{
		"--kubeconfig=" + framework.ServiceAccountKubeconfig(t, f.env, controller),
		"--leader-elect=true",
		"--leader-elect-resource-namespace=" + f.ns,
		// Only the test's namespace: a binary watching the whole cluster would reconcile objects of tests
		// running in parallel (cronjob-controller already has reconcilers).
		"--namespace=" + f.ns,
	}, extraArgs...)
	args = append(args, framework.ConversionArgs(controller)...)
	return framework.Start(t, framework.Binary(t, f.env, controller), args...)
}
