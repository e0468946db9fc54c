package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// TestAdoptFromAppsV1: an apps/v1 DaemonSet deleted with --cascade=orphan
// and replaced by an Advanced DaemonSet of the same template (written anew,
// without apps/v1's annotations): the pods and the old ControllerRevision
// are adopted, the revision whose data equals the template is re-used, so
// its hash stays current and no pod is recreated.
func TestAdoptFromAppsV1(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2, nil)
	ctx := context.Background()
	tmpl := h.newDS("mig").Spec
	up := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "mig"}, Spec: appsv1.DaemonSetSpec{Selector: tmpl.Selector, Template: tmpl.Template}}
	_, err := h.Env.Kube.AppsV1().DaemonSets(h.NS).Create(ctx, up, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(h.pods("mig")) == 2, nil })
	stored, err := h.Env.Kube.AppsV1().DaemonSets(h.NS).Get(ctx, "mig", metav1.GetOptions{})
	require.NoError(t, err)
	orphan := metav1.DeletePropagationOrphan
	require.NoError(t, h.Env.Kube.AppsV1().DaemonSets(h.NS).Delete(ctx, "mig", metav1.DeleteOptions{PropagationPolicy: &orphan}))
	uids := map[string]types.UID{}
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, p := range h.pods("mig") {
			if metav1.GetControllerOf(&p) != nil {
				return false, nil
			}
			uids[p.Name] = p.UID
		}
		return len(uids) == 2, nil
	})

	h.start()
	ds := h.sets.Create(h.newDS("mig", func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template = stored.Spec.Template }))
	h.waitPlaced("mig", nodes, "")
	st := h.waitStatus("mig", "adopted and settled", settled(2))
	testenv.Consistently(t, 2*time.Second, func() error {
		for _, p := range h.pods("mig") {
			if uids[p.Name] != p.UID || !metav1.IsControlledBy(&p, ds) {
				return fmt.Errorf("pod %s not the adopted one", p.Name)
			}
		}
		return nil
	})
	revs := h.history("mig")
	require.Len(t, revs, 1, "the apps/v1 revision, adopted and re-used")
	assert.Equal(t, "mig-"+st.Status.DaemonSetHash, revs[0].Name)
}

// TestReleaseRelabelledPod: a pod relabelled out of the selector is
// released (it keeps running, without controllerRef) and its node gets a new
// daemon pod, as upstream's DaemonSet does.
func TestReleaseRelabelledPod(t *testing.T) {
	h := newHarness(t)
	nodes, placed := h.place("rel", 1)
	p := placed[nodes[0]]
	h.PatchPod(p.Name, `{"metadata":{"labels":{"app":"debug"}}}`)
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		got, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), p.Name, metav1.GetOptions{})
		return err == nil && metav1.GetControllerOf(got) == nil, nil
	})
	fresh := h.waitPlaced("rel", nodes, "")
	assert.NotEqual(t, p.UID, fresh[nodes[0]].UID)
	h.waitStatus("rel", "settled", settled(1))
}
