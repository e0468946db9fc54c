package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/cloneset/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Item 5: revisions are owned, named <cloneset>-<hash>, hold the template as
// a replace patch, an equal old revision is reused on rollback (with a new
// .revision), and history is truncated to revisionHistoryLimit.
func TestRevisionHistory(t *testing.T) {
	h := newHarness(t)
	h.startController()
	cs := h.create(newCloneSet("hist", 1, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.RevisionHistoryLimit = ptr.To(int32(1))
		cs.Annotations = map[string]string{pub.ChangeCauseAnnotation: "initial"}
	}))
	st := h.waitStatus("hist", "settled", settled(1))
	revs := h.revisions(cs)
	require.Len(t, revs, 1)
	r1 := revs[0]
	assert.Equal(t, st.Status.UpdateRevision, r1.Name)
	assert.Equal(t, "hist-"+r1.Labels["controller.kubernetes.io/hash"], r1.Name)
	assert.Equal(t, "hist", r1.Labels["app"], "template labels")
	assert.Equal(t, "initial", r1.Annotations[pub.ChangeCauseAnnotation], "CloneSet annotations copied")
	assert.Contains(t, r1.Annotations, pub.CloneSetVolumeClaimTemplateHashKey, "as OpenKruise: empty without volumeClaimTemplates")
	assert.Equal(t, int64(1), r1.Revision)
	ref := metav1.GetControllerOf(&r1)
	require.NotNil(t, ref)
	assert.Equal(t, cs.UID, ref.UID)
	var data map[string]map[string]map[string]any
	require.NoError(t, json.Unmarshal(r1.Data.Raw, &data))
	tmpl := data["spec"]["template"]
	assert.Equal(t, "replace", tmpl["$patch"])
	assert.Equal(t, imageV1, tmpl["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"])
	require.NotNil(t, st.Status.CollisionCount)
	assert.Equal(t, int32(0), *st.Status.CollisionCount)

	h.modify("hist", setImage(imageV2))
	st2 := h.waitStatus("hist", "on v2", func(s appsv1alpha1.CloneSetStatus) bool { return settled(1)(s) && s.UpdateRevision != r1.Name })
	// v1 is kept: limit 1 non-live revision.
	assert.Len(t, h.revisions(cs), 2)

	// Rollback: the v1 revision is reused and becomes the newest.
	h.modify("hist", setImage(imageV1))
	st3 := h.waitStatus("hist", "back on v1", func(s appsv1alpha1.CloneSetStatus) bool { return settled(1)(s) && s.UpdateRevision == r1.Name })
	assert.Equal(t, r1.Name, st3.Status.CurrentRevision)
	revs = h.revisions(cs)
	require.Len(t, revs, 2)
	assert.Equal(t, r1.Name, revs[1].Name, "the old revision object, now newest")
	assert.Equal(t, r1.UID, revs[1].UID)
	assert.Equal(t, int64(3), revs[1].Revision)

	// Two more templates: history keeps the live one plus 1.
	h.modify("hist", setImage(imageV3))
	h.waitStatus("hist", "on v3", func(s appsv1alpha1.CloneSetStatus) bool { return settled(1)(s) && s.UpdateRevision != r1.Name })
	h.modify("hist", setImage("registry.local/app:v4"))
	st5 := h.waitStatus("hist", "on v4", func(s appsv1alpha1.CloneSetStatus) bool {
		return settled(1)(s) && s.UpdateRevision != r1.Name && s.UpdateRevision != st2.Status.UpdateRevision
	})
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		revs = h.revisions(cs)
		if len(revs) != 2 {
			return false, fmt.Errorf("%d revisions", len(revs))
		}
		return true, nil
	})
	assert.Equal(t, st5.Status.UpdateRevision, revs[1].Name)
}

// Item 6: status, the scale subresource (kubectl scale and an HPA-style
// read), and no status write when nothing changed.
func TestStatusAndScaleSubresource(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("sc", 2, func(cs *appsv1alpha1.CloneSet) { cs.Spec.MinReadySeconds = 2 }))
	st := h.waitStatus("sc", "settled and available", func(s appsv1alpha1.CloneSetStatus) bool { return settled(2)(s) && s.AvailableReplicas == 2 })
	assert.Equal(t, int32(2), st.Status.UpdatedAvailableReplicas)
	assert.Equal(t, int32(2), st.Status.ExpectedUpdatedReplicas)
	assert.Equal(t, st.Generation, st.Status.ObservedGeneration)
	progressing := findCond(st.Status.Conditions, appsv1alpha1.CloneSetConditionTypeProgressing)
	require.NotNil(t, progressing)
	assert.Equal(t, appsv1alpha1.CloneSetProgressAvailable, progressing.Reason)

	scale, err := h.Client.AppsV1alpha1().CloneSets(h.NS).GetScale(context.Background(), "sc", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), scale.Spec.Replicas)
	assert.Equal(t, int32(2), scale.Status.Replicas)
	assert.Equal(t, "app=sc", scale.Status.Selector, "HPA reads the selector from status.labelSelector")

	out, err := exec.Command("kubectl", "--kubeconfig", h.Env.KubeconfigPath, "-n", h.NS, "scale", "clonesets.apps.kruise.io/sc", "--replicas=3").CombinedOutput()
	require.NoError(t, err, string(out))
	h.waitPods("sc", "3 ready", allReady(3))
	st = h.waitStatus("sc", "3 available", func(s appsv1alpha1.CloneSetStatus) bool { return settled(3)(s) && s.AvailableReplicas == 3 })

	// Settled: the status is not rewritten.
	rv := st.ResourceVersion
	testenv.Consistently(t, 3*time.Second, func() error {
		if cur := h.get("sc").ResourceVersion; cur != rv {
			return fmt.Errorf("CloneSet written while settled: %s -> %s", rv, cur)
		}
		return nil
	})
}

// Item 10: a podsToDelete name that matches no pod gives a Warning event and
// the FailedScale condition, the name is trimmed, and the controller does not
// loop on it.
func TestPodsToDeleteNotFound(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("bad", 2))
	h.waitStatus("bad", "settled", settled(2))
	h.modify("bad", func(cs *appsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{"no-such-pod"} })
	ev := h.waitEvent("bad", controller.ReasonPodsToDeleteNotFound)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Contains(t, ev.Message, "no-such-pod")
	st := h.waitStatus("bad", "FailedScale condition", func(s appsv1alpha1.CloneSetStatus) bool {
		c := findCond(s.Conditions, appsv1alpha1.CloneSetConditionFailedScale)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == controller.ReasonPodsToDeleteNotFound
	})
	c := findCond(st.Status.Conditions, appsv1alpha1.CloneSetConditionFailedScale)
	assert.Contains(t, c.Message, "spec.scaleStrategy.podsToDelete")
	assert.Empty(t, st.Spec.ScaleStrategy.PodsToDelete, "trimmed")
	assert.Len(t, h.pods("bad"), 2, "no pod deleted")
	rv := st.ResourceVersion
	testenv.Consistently(t, 3*time.Second, func() error {
		if cur := h.get("bad").ResourceVersion; cur != rv {
			return fmt.Errorf("CloneSet rewritten: %s -> %s", rv, cur)
		}
		if n := len(eventsWithReason(h.events("bad"), controller.ReasonPodsToDeleteNotFound)); n != 1 {
			return fmt.Errorf("%d warning events", n)
		}
		return nil
	})
	// A later scale clears the condition.
	h.modify("bad", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(3)) })
	h.waitStatus("bad", "condition cleared", func(s appsv1alpha1.CloneSetStatus) bool {
		c := findCond(s.Conditions, appsv1alpha1.CloneSetConditionFailedScale)
		return c != nil && c.Status == corev1.ConditionFalse
	})
}

func findCond(conds []appsv1alpha1.CloneSetCondition, t appsv1alpha1.CloneSetConditionType) *appsv1alpha1.CloneSetCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
