// Package cloneset tests the built cloneset-controller binary end to end:
// started as a process under the ServiceAccount and RBAC deploy/ installs
// (so RBAC is proven sufficient), restricted to the test's namespace, driving
// the quick-start sample CloneSet through a scale-up and an in-place update.
package cloneset

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func sample(t *testing.T) *appsv1alpha1.CloneSet {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "../../../deploy/samples/cloneset.yaml"))
	require.NoError(t, err)
	cs := &appsv1alpha1.CloneSet{}
	require.NoError(t, yaml.UnmarshalStrict(raw, cs))
	return cs
}

func TestSampleScalesAndUpdatesInPlace(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	client := versioned.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	p := framework.StartScoped(t, env, "cloneset", ns)

	cs := sample(t)
	cs.Namespace = ns
	_, err := client.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{})
	require.NoError(t, err)

	pods := func() []corev1.Pod { return framework.Pods(t, env, ns, "app=sample") }
	readyOn := func(image string, n int) func() (bool, error) {
		return framework.ReadyOn(t, env, ns, "app=sample", image, n)
	}
	testenv.Eventually(t, 2*time.Minute, readyOn("registry.example/sample:v1", 3))
	before := map[types.UID]bool{}
	for _, p := range pods() {
		before[p.UID] = true
	}

	_, err = client.AppsV1alpha1().CloneSets(ns).Patch(ctx, "sample", types.MergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.example/sample:v2"}]}}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, 2*time.Minute, readyOn("registry.example/sample:v2", 3))
	for _, p := range pods() {
		assert.True(t, before[p.UID], "pod %s was updated in place, not recreated", p.Name)
	}
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		got, err := client.AppsV1alpha1().CloneSets(ns).Get(ctx, "sample", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := got.Status
		return s.UpdatedReadyReplicas == 3 && s.CurrentRevision == s.UpdateRevision && s.ObservedGeneration == got.Generation, nil
	})

	metrics := p.Metrics(t)
	assert.Contains(t, metrics, "cloneset_scale_expectation_leakage_total")
	assert.Contains(t, metrics, `workqueue_adds_total{name="cloneset"}`)
	require.True(t, p.Running(), "process exited; log:\n%s", p.Log())
}
