// Package statefulset tests the built statefulset-controller binary end to
// end: started as a process under the ServiceAccount and RBAC deploy/
// installs (so RBAC is proven sufficient), restricted to the test's
// namespace, driving the quick-start sample through creation, an in-place
// update, a scale-down that deletes the claims (whenScaled: Delete) and the
// set's deletion, which deletes the rest (whenDeleted: Delete).
package statefulset

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func sample(t *testing.T) *appsv1beta1.StatefulSet {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "../../../deploy/samples/statefulset.yaml"))
	require.NoError(t, err)
	set := &appsv1beta1.StatefulSet{}
	require.NoError(t, yaml.UnmarshalStrict(raw, set))
	return set
}

func TestSampleLifecycle(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	client := versioned.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	p := framework.StartScoped(t, env, "statefulset", ns, "-v=2")

	set := sample(t)
	set.Namespace = ns
	_, err := client.AppsV1beta1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{})
	require.NoError(t, err)

	pods := func() []corev1.Pod { return framework.Pods(t, env, ns, "app=sample-db") }
	readyOn := func(image string, n int) func() (bool, error) {
		return framework.ReadyOn(t, env, ns, "app=sample-db", image, n)
	}
	claimExists := func(name string) bool {
		_, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return !apierrors.IsNotFound(err)
	}
	testenv.Eventually(t, 2*time.Minute, readyOn("registry.example/sample-db:v1", 3))
	before := map[types.UID]bool{}
	for _, p := range pods() {
		before[p.UID] = true
	}
	for _, c := range []string{"data-sample-db-0", "data-sample-db-1", "data-sample-db-2"} {
		assert.True(t, claimExists(c), c)
	}

	// A JSON patch: a merge patch would replace the whole container list (and drop its volume mount).
	_, err = client.AppsV1beta1().StatefulSets(ns).Patch(ctx, "sample-db", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"registry.example/sample-db:v2"}]`), metav1.PatchOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, 2*time.Minute, readyOn("registry.example/sample-db:v2", 3))
	for _, p := range pods() {
		assert.True(t, before[p.UID], "pod %s was updated in place, not recreated", p.Name)
	}

	_, err = client.AppsV1beta1().StatefulSets(ns).Patch(ctx, "sample-db", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		return len(pods()) == 1 && !claimExists("data-sample-db-1") && !claimExists("data-sample-db-2"), nil
	})
	assert.True(t, claimExists("data-sample-db-0"))

	require.NoError(t, client.AppsV1beta1().StatefulSets(ns).Delete(ctx, "sample-db", metav1.DeleteOptions{}))
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) { return !claimExists("data-sample-db-0"), nil })
	require.True(t, p.Running(), "process exited; log:\n%s", p.Log())
}
