package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// history is what `kubectl kruise rollout history` lists: revisions in the
// DaemonSet's namespace that its selector matches and that it controls,
// by .revision.
func (h *harness) history(name string) []appsv1.ControllerRevision {
	h.T.Helper()
	ds := h.sets.Get(name)
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	require.NoError(h.T, err)
	list, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: sel.String()})
	require.NoError(h.T, err)
	var out []appsv1.ControllerRevision
	for _, r := range list.Items {
		if metav1.IsControlledBy(&r, ds) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}

// undo is `kubectl kruise rollout undo`: a JSON merge patch of the
// DaemonSet with the previous revision's data, sent as is.
func (h *harness) undo(name string) {
	h.T.Helper()
	revs := h.history(name)
	require.GreaterOrEqual(h.T, len(revs), 2)
	prev := revs[len(revs)-2]
	_, err := h.Client.AppsV1alpha1().DaemonSets(h.NS).Patch(context.Background(), name, types.MergePatchType, prev.Data.Raw, metav1.PatchOptions{})
	require.NoError(h.T, err)
}

// TestRevisionsHistoryAndUndo: ControllerRevisions are upstream's — owned,
// named <ds>-<hash>, labelled controller-revision-hash (the pods' label and
// status.daemonSetHash), holding the template as a replace patch, the
// DaemonSet's annotations copied — so `rollout history` lists them and
// `rollout undo` restores the previous template, re-using its revision with
// a new .revision; history is truncated to revisionHistoryLimit.
func TestRevisionsHistoryAndUndo(t *testing.T) {
	h := newHarness(t)
	nodes, _ := h.place("hist", 2, func(ds *appsv1alpha1.DaemonSet) {
		ds.Annotations = map[string]string{pub.ChangeCauseAnnotation: "initial"}
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	})
	st := h.waitStatus("hist", "settled", settled(2))
	revs := h.history("hist")
	require.Len(t, revs, 1)
	r1 := revs[0]
	hash1 := st.Status.DaemonSetHash
	assert.Equal(t, "hist-"+hash1, r1.Name)
	assert.Equal(t, hash1, r1.Labels[pub.ControllerRevisionHashLabelKey])
	assert.Equal(t, "initial", r1.Annotations[pub.ChangeCauseAnnotation])
	assert.Equal(t, int64(1), r1.Revision)
	var data map[string]map[string]map[string]any
	require.NoError(t, json.Unmarshal(r1.Data.Raw, &data))
	assert.Equal(t, "replace", data["spec"]["template"]["$patch"])

	hash2 := h.rollTo("hist", imageV2)
	h.waitPlaced("hist", nodes, hash2)
	require.Len(t, h.history("hist"), 2)

	h.undo("hist")
	back := h.sets.WaitFor("hist", "back on the first revision", func(ds *appsv1alpha1.DaemonSet) bool {
		return ds.Status.ObservedGeneration == ds.Generation && ds.Status.DaemonSetHash == hash1
	})
	assert.Equal(t, imageV1, back.Spec.Template.Spec.Containers[0].Image)
	h.waitPlaced("hist", nodes, hash1)
	h.waitStatus("hist", "settled", settled(2))
	revs = h.history("hist")
	require.Len(t, revs, 2)
	assert.Equal(t, r1.UID, revs[1].UID, "the first revision is re-used")
	assert.Equal(t, int64(3), revs[1].Revision, "and becomes the newest")

	// A third template: the limit keeps one revision besides the live one.
	hash3 := h.rollTo("hist", "registry.local/agent:v3")
	h.waitPlaced("hist", nodes, hash3)
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		revs = h.history("hist")
		return len(revs) == 2 && revs[1].Labels[pub.ControllerRevisionHashLabelKey] == hash3, nil
	})
}

// TestStatusWrittenOnlyOnChange: once settled, the DaemonSet is not written
// again while nothing changes (node heartbeats included).
func TestStatusWrittenOnlyOnChange(t *testing.T) {
	h := newHarness(t)
	h.place("quiet", 2, func(ds *appsv1alpha1.DaemonSet) { ds.Spec.MinReadySeconds = 1 })
	st := h.waitStatus("quiet", "settled", settled(2))
	rv := st.ResourceVersion
	testenv.Consistently(t, 3*time.Second, func() error {
		if got := h.sets.Get("quiet").ResourceVersion; got != rv {
			return fmt.Errorf("DaemonSet written again: %s → %s", rv, got)
		}
		return nil
	})
}
