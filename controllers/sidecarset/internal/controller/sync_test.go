package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

type fixture struct {
	*wiringtest.Fakes
	c *Controller
}

// newFixture builds the controller over fake clients whose caches hold set
// and pods (informers not started: the test seeds their indexers).
func newFixture(t *testing.T, set *appsv1alpha1.SidecarSet, pods []*corev1.Pod) *fixture {
	t.Helper()
	objs := []runtime.Object{set}
	for _, p := range pods {
		objs = append(objs, p)
	}
	f := &fixture{Fakes: wiringtest.New(t, now, objs...)}
	c, err := New(Deps{SystemNamespace: "sys", Deps: f.Deps()})
	require.NoError(t, err)
	f.Cache(objs...)
	// The fake tracker keeps resourceVersions; the API server bumps them on
	// every write, which is what resource-version expectations rely on
	// (BumpResourceVersions leaves patches alone).
	f.Kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := k8stesting.ObjectReaction(f.Kube.Tracker())(a)
		if err != nil || !handled {
			return handled, obj, err
		}
		p := obj.(*corev1.Pod)
		p.ResourceVersion = "2"
		return true, p, f.Kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
	})
	f.c = c
	f.Clear()
	return f
}

// patched is the pod of pods a patch action wrote, as the API server makes
// it (the controller writes pods as patches of the difference).
func patched(t *testing.T, pods []*corev1.Pod, a k8stesting.Action) *corev1.Pod {
	t.Helper()
	pa := a.(k8stesting.PatchAction)
	for _, p := range pods {
		if p.Name != pa.GetName() {
			continue
		}
		doc, err := json.Marshal(p)
		require.NoError(t, err)
		doc, err = strategicpatch.StrategicMergePatch(doc, pa.GetPatch(), corev1.Pod{})
		require.NoError(t, err)
		out := &corev1.Pod{}
		require.NoError(t, json.Unmarshal(doc, out))
		return out
	}
	t.Fatalf("patch of unknown pod %s", pa.GetName())
	return nil
}

// isUpgrade: a write of the pod itself (not its status): an in-place
// upgrade or a flip.
func isUpgrade(a k8stesting.Action) bool {
	return a.GetVerb() == "patch" && a.GetSubresource() == ""
}

func writes(actions []k8stesting.Action, resource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range actions {
		if a.GetResource().Resource == resource && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a)
		}
	}
	return out
}

// One sync registers the revision, writes status and upgrades one pod
// (maxUnavailable 1); a second sync on the same, stale cache waits for the
// cache to show that write instead of acting again.
func TestSyncUpgradesOnceUntilCacheCatchesUp(t *testing.T) {
	v1, v2 := testSet("side:1"), testSet("side:2")
	v2.UID, v2.Generation = "uid-s", 2
	var pods []*corev1.Pod
	for i := range 3 {
		p := injectedPod(t, fmt.Sprintf("p%d", i), v1, nil)
		p.UID, p.ResourceVersion = types.UID("uid-"+p.Name), "1"
		pods = append(pods, p)
	}
	f := newFixture(t, v2, pods)

	require.NoError(t, f.c.sync(context.Background(), "s"))
	revs := writes(f.Kube.Actions(), "controllerrevisions")
	require.Len(t, revs, 1)
	assert.Equal(t, "create", revs[0].GetVerb())
	assert.Equal(t, "sys", revs[0].GetNamespace(), "revisions live in the controller's namespace")
	podWrites := writes(f.Kube.Actions(), "pods")
	require.Len(t, podWrites, 2, "maxUnavailable 1: one upgrade and its SidecarSetUpgradable condition")
	require.True(t, isUpgrade(podWrites[0]))
	updated := patched(t, pods, podWrites[0])
	assert.Equal(t, "side:2", updated.Spec.Containers[0].Image)
	cond := podWrites[1].(k8stesting.PatchAction)
	assert.Equal(t, []string{"status", updated.Name}, []string{cond.GetSubresource(), cond.GetName()})
	assert.Contains(t, string(cond.GetPatch()), `"reason":"AllSidecarsetUpgradable"`)
	assert.Contains(t, string(cond.GetPatch()), `"message":"{\"s\":true}"`)
	status := writes(f.Client.Actions(), "sidecarsets")
	require.Len(t, status, 1)
	st := status[0].(k8stesting.UpdateAction).GetObject().(*appsv1alpha1.SidecarSet).Status
	assert.Equal(t, int32(3), st.MatchedPods)
	assert.Equal(t, int32(0), st.UpdatedPods)
	assert.NotEmpty(t, st.LatestRevision)

	// The fake API server bumped the pod's resourceVersion; the cache did not.
	f.Clear()
	require.NoError(t, f.c.sync(context.Background(), "s"))
	assert.Empty(t, writes(f.Kube.Actions(), "pods"), "no second write from a stale cache")
}

// Issue 26 item 13: what the plan cannot read is reported, not dropped: a
// Warning on the SidecarSet (with the count and the first pod) and one on
// each such pod; an unreadable maxUnavailable upgrades nothing and says why.
func TestSyncReportsUnreadable(t *testing.T) {
	v1, v2 := testSet("side:1"), testSet("side:2")
	v2.UID, v2.Generation = "uid-s", 2
	var pods []*corev1.Pod
	for i := range 2 {
		p := injectedPod(t, fmt.Sprintf("p%d", i), v1, nil)
		p.UID, p.ResourceVersion = types.UID("uid-"+p.Name), "1"
		pods = append(pods, p)
	}
	pods[0].Annotations[sidecarcontrol.WorkingHotUpgradeContainer] = "not json"
	f := newFixture(t, v2, pods)
	require.NoError(t, f.c.sync(context.Background(), "s"))
	events := f.Events()
	assert.Contains(t, events, "Warning CorruptPodAnnotation 1 pod(s) left alone, their sidecar upgrade state unreadable; first ns/p0: annotation "+
		sidecarcontrol.WorkingHotUpgradeContainer+": invalid character 'o' in literal null (expecting 'u')")
	assert.Contains(t, events, "Warning CorruptPodAnnotation sidecarset s does not upgrade this pod: annotation "+
		sidecarcontrol.WorkingHotUpgradeContainer+": invalid character 'o' in literal null (expecting 'u') (remove the annotation to let the controller start over)")
	for _, w := range writes(f.Kube.Actions(), "pods") {
		if isUpgrade(w) {
			assert.NotEqual(t, "p0", w.(k8stesting.PatchAction).GetName(), "the unreadable pod is not upgraded")
		}
	}

	bad := v2.DeepCopy()
	bad.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("half"))
	f = newFixture(t, bad, pods[1:])
	require.NoError(t, f.c.sync(context.Background(), "s"))
	assert.Contains(t, f.Events(),
		"Warning InvalidUpdateStrategy not upgrading any pod: spec.updateStrategy.maxUnavailable: invalid value for IntOrString: invalid type: string is not a percentage")
	for _, w := range writes(f.Kube.Actions(), "pods") {
		assert.False(t, isUpgrade(w), "no upgrade under an unreadable maxUnavailable")
	}
}
