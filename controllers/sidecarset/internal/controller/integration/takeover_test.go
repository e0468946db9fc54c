package integration

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// The fixtures below are the objects OpenKruise v1.9.0 leaves behind for a
// SidecarSet, written from reading its source (never from Flotilla's code):
// each names the OpenKruise function it mirrors.

const (
	sideV0        = "registry.local/side:v0"
	patchedKey    = "takeover.flotilla.dev/patched"
	okHashAnnot   = "kruise.io/sidecarset-hash"
	okNoImgAnnot  = "kruise.io/sidecarset-hash-without-image"
	okListAnnot   = "kruise.io/sidecarset-injected-list"
	okNameLabel   = "kruise.io/sidecarset-name"
	okRevHashLbl  = "controller.kubernetes.io/hash"
	okInjectedEnv = "IS_INJECTED"
)

// okSidecarContainers mirrors apis/apps/defaults SetDefaultsSidecarSet →
// setDefaultSidecarContainer (podInjectPolicy BeforeAppContainer, upgradeType
// ColdUpgrade, shareVolumePolicy disabled) and corev1 SetDefaults_Container
// (imagePullPolicy IfNotPresent for a tagged image, terminationMessage*), as
// the SidecarSet mutating webhook stores them.
func okSidecarContainers(image string) []appsv1alpha1.SidecarContainer {
	return []appsv1alpha1.SidecarContainer{{
		Container: corev1.Container{
			Name: "side", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		},
		PodInjectPolicy:   appsv1alpha1.BeforeAppContainerType,
		UpgradeStrategy:   appsv1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: appsv1alpha1.SidecarContainerColdUpgrade},
		ShareVolumePolicy: appsv1alpha1.ShareVolumePolicy{Type: appsv1alpha1.ShareVolumePolicyDisabled},
	}}
}

// okSidecarSetHash mirrors pkg/control/sidecarcontrol SidecarSetHash /
// SidecarSetHashWithoutImage (encodeSidecarSet: sha256 of the JSON of
// {"containers": …}, no native-sidecar init containers here, safe-encoded).
func okSidecarSetHash(containers []appsv1alpha1.SidecarContainer, withImage bool) string {
	cs := make([]appsv1alpha1.SidecarContainer, len(containers))
	for i := range containers {
		containers[i].DeepCopyInto(&cs[i])
		if !withImage {
			cs[i].Image = ""
		}
	}
	data, err := json.Marshal(map[string]any{"containers": cs})
	if err != nil {
		panic(err)
	}
	return rand.SafeEncodeString(fmt.Sprintf("%x", sha256.Sum256(data)))
}

// okRevisionData mirrors history_control.go getPatch: the SidecarSet encoded,
// decoded into map[string]interface{}, the five recorded spec fields copied
// under "$patch":"replace" and encoded again (keys sorted at every level).
func okRevisionData(t *testing.T, spec *appsv1alpha1.SidecarSetSpec) []byte {
	t.Helper()
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	var m map[string]interface{}
	require.NoError(t, json.Unmarshal(raw, &m))
	specCopy := map[string]interface{}{"$patch": "replace"}
	for _, k := range []string{"volumes", "containers", "initContainers", "imagePullSecrets", "patchPodMetadata"} {
		specCopy[k] = m[k]
	}
	out, err := json.Marshal(map[string]interface{}{"spec": specCopy})
	require.NoError(t, err)
	return out
}

// okRevisionHash mirrors Kubernetes' history.HashControllerRevision as
// OpenKruise's CreateControllerRevision calls it: FNV-1 32 of the data, then
// the decimal collision count, printed in decimal and safe-encoded.
func okRevisionHash(data []byte, collisionCount int32) string {
	h := fnv.New32()
	_, _ = h.Write(data)
	_, _ = h.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// okRevision mirrors history_control.go NewRevision + CreateControllerRevision
// (registerLatestRevision): named <set>-<hash> in kruise-manager's namespace,
// labelled with the SidecarSet's labels, kruise.io/sidecarset-name and
// controller.kubernetes.io/hash, annotated with all the SidecarSet's
// annotations (its two hash annotations among them), controlled by the
// SidecarSet (apps.kruise.io/v1beta1: v1.9 reconciles v1beta1 objects).
func okRevision(t *testing.T, set *appsv1alpha1.SidecarSet, ns string, number int64) *appsv1.ControllerRevision {
	t.Helper()
	data := okRevisionData(t, &set.Spec)
	hash := okRevisionHash(data, 0)
	lbls := map[string]string{}
	for k, v := range set.Labels {
		lbls[k] = v
	}
	lbls[okRevHashLbl] = hash
	lbls[okNameLabel] = set.Name
	ann := map[string]string{}
	for k, v := range set.Annotations {
		ann[k] = v
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: set.Name + "-" + hash, Namespace: ns, Labels: lbls, Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps.kruise.io/v1beta1", Kind: "SidecarSet", Name: set.Name, UID: set.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
}

// okUpgradeSpec mirrors the pod webhook's SidecarSetUpgradeSpec
// (pkg/webhook/pod/mutating/sidecarset.go buildSidecars).
type okUpgradeSpec struct {
	UpdateTimestamp    metav1.Time `json:"updateTimestamp"`
	Hash               string      `json:"hash"`
	SidecarSetName     string      `json:"sidecarSetName"`
	SidecarList        []string    `json:"sidecarList"`
	ControllerRevision string      `json:"controllerRevision,omitempty"`
}

// okInjectedPod mirrors buildSidecars and the pod webhook's injection: the
// sidecar (BeforeAppContainer) with IS_INJECTED=true appended to its env,
// before the app container; the Retain patchPodMetadata annotation the
// whitelist allowed; kruise.io/sidecarset-hash (with controllerRevision =
// status.latestRevision), -hash-without-image and -injected-list.
func okInjectedPod(t *testing.T, ns, app, name string, set *appsv1alpha1.SidecarSet, injected time.Time) *corev1.Pod {
	t.Helper()
	side := set.Spec.Containers[0].Container.DeepCopy()
	side.Env = append(side.Env, corev1.EnvVar{Name: okInjectedEnv, Value: "true"})
	ts := metav1.NewTime(injected.Truncate(time.Second))
	withImage, err := json.Marshal(map[string]okUpgradeSpec{set.Name: {
		UpdateTimestamp: ts, Hash: set.Annotations[okHashAnnot], SidecarSetName: set.Name,
		SidecarList: []string{"side"}, ControllerRevision: set.Status.LatestRevision,
	}})
	require.NoError(t, err)
	withoutImage, err := json.Marshal(map[string]okUpgradeSpec{set.Name: {
		UpdateTimestamp: ts, Hash: set.Annotations[okNoImgAnnot], SidecarSetName: set.Name, SidecarList: []string{"side"},
	}})
	require.NoError(t, err)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, Labels: map[string]string{"app": app},
			Annotations: map[string]string{
				patchedKey:   "yes",
				okHashAnnot:  string(withImage),
				okNoImgAnnot: string(withoutImage),
				okListAnnot:  set.Name,
			},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{*side, {Name: "main", Image: "registry.local/app:v1"}}},
	}
}

// TestTakeoverFromOpenKruise (issue 23): a SidecarSet, its two revisions and
// whitelist in a namespace standing in for kruise-system
// (--revision-namespace), and three injected, running pods, all as
// OpenKruise v1.9 leaves them; then Flotilla's reconciler and pod webhook
// start. Nothing is written to the pods, no revision is added (OpenKruise's
// are reused: equal bytes), the status stays OpenKruise's, and a pod created
// afterwards with injectionStrategy.revision pinned to OpenKruise's older
// revision is injected with it, patchPodMetadata allowed by the whitelist
// OpenKruise's namespace holds.
func TestTakeoverFromOpenKruise(t *testing.T) {
	h := newHarness(t)
	h.revNS = h.Env.Namespace(t) // kruise-system's stand-in
	kube := h.Env.Kube
	ctx := context.Background()
	const app = "okapp"

	// The whitelist as OpenKruise reads it (kruise-configuration in kruise-system).
	_, err := kube.CoreV1().ConfigMaps(h.revNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: sidecarcontrol.ConfigMapName},
		Data: map[string]string{sidecarcontrol.WhitelistKey: `{"rules":[{"selector":{"matchLabels":{"` + testLabel + `":"` + h.NS + `"}},` +
			`"allowedAnnotationKeyExprs":["^takeover\\.flotilla\\.dev/patched$"]}]}`},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// SidecarSet as SetDefaultsSidecarSet + SetHashSidecarSet store it, at
	// image v1 after an earlier v0.
	spec := func(image string) appsv1alpha1.SidecarSetSpec {
		return appsv1alpha1.SidecarSetSpec{
			Namespace:  h.NS,
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Containers: okSidecarContainers(image),
			UpdateStrategy: appsv1alpha1.SidecarSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1)), Partition: ptr.To(intstr.FromInt32(0)),
			},
			RevisionHistoryLimit: ptr.To[int32](10),
			PatchPodMetadata: []appsv1alpha1.SidecarSetPatchPodMetadata{{
				Annotations: map[string]string{patchedKey: "yes"}, PatchPolicy: appsv1alpha1.SidecarSetRetainPatchPolicy,
			}},
		}
	}
	hashes := func(s *appsv1alpha1.SidecarSet) {
		s.Annotations = map[string]string{
			okHashAnnot:  okSidecarSetHash(s.Spec.Containers, true),
			okNoImgAnnot: okSidecarSetHash(s.Spec.Containers, false),
		}
	}
	v0 := &appsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: h.setName("ok"), Labels: map[string]string{testLabel: h.NS}}, Spec: spec(sideV0)}
	hashes(v0)
	v1 := v0.DeepCopy()
	v1.Spec = spec(sideV1)
	hashes(v1)
	rev0Name := v0.Name + "-" + okRevisionHash(okRevisionData(t, &v0.Spec), 0)
	// The user pinned new pods to the v0 revision after the pods below were injected.
	v1.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{
		RevisionName: ptr.To(rev0Name), Policy: appsv1alpha1.AlwaysSidecarSetInjectRevisionPolicy,
	}
	set := h.createSet(v1)
	v0.UID, v1.UID = set.UID, set.UID

	rev0, err := kube.AppsV1().ControllerRevisions(h.revNS).Create(ctx, okRevision(t, v0, h.revNS, 1), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, rev0Name, rev0.Name)
	rev1, err := kube.AppsV1().ControllerRevisions(h.revNS).Create(ctx, okRevision(t, v1, h.revNS, 2), metav1.CreateOptions{})
	require.NoError(t, err)
	v1.Status.LatestRevision = rev1.Name

	injected := time.Now()
	for i := range 3 {
		_, err := kube.CoreV1().Pods(h.NS).Create(ctx, okInjectedPod(t, h.NS, app, fmt.Sprintf("okapp-%d", i), v1, injected), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	h.waitPods(app, "OpenKruise's pods running", allReady(3))
	// Status as OpenKruise's calculateSidecarSetStatus last wrote it.
	okStatus := appsv1alpha1.SidecarSetStatus{
		ObservedGeneration: set.Generation, MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3,
		LatestRevision: rev1.Name, CollisionCount: ptr.To[int32](0),
	}
	h.sets.ModifyStatus(set.Name, func(s *appsv1alpha1.SidecarSet) { s.Status = okStatus })
	before := h.pods(app)
	writes := testenv.WatchPodWrites(t, kube, h.NS)

	// Flotilla takes over.
	h.startController()
	h.startWebhook()

	// A pod created now: pinned to OpenKruise's v0 revision, patched as the
	// whitelist in OpenKruise's namespace allows.
	pod, err := kube.CoreV1().Pods(h.NS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "okapp-new", Namespace: h.NS, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.local/app:v1"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "a pod pinned to OpenKruise's revision is injected, not denied")
	assert.Equal(t, sideV0, image(pod, "side"), "injected from the pinned revision")
	assert.Equal(t, "yes", pod.Annotations[patchedKey], "patchPodMetadata allowed by the whitelist in the revision namespace")
	assert.Equal(t, rev0Name, sidecarcontrol.PodControllerRevision(pod, set.Name))

	// The reconciler has synced once it counts the new pod.
	h.waitStatus("ok", "the new pod matched", func(s appsv1alpha1.SidecarSetStatus) bool { return s.MatchedPods == 4 })
	revs, err := kube.AppsV1().ControllerRevisions(h.revNS).List(ctx, metav1.ListOptions{LabelSelector: okNameLabel + "=" + set.Name})
	require.NoError(t, err)
	var names []string
	for _, r := range revs.Items {
		names = append(names, r.Name)
	}
	assert.ElementsMatch(t, []string{rev0.Name, rev1.Name}, names, "OpenKruise's revisions reused, no twin")
	got := h.sets.Get(set.Name).Status
	assert.Equal(t, rev1.Name, got.LatestRevision)
	assert.Equal(t, ptr.To[int32](0), got.CollisionCount)

	// OpenKruise's pods: not written, restarted or recreated.
	names = nil
	for i := range before {
		names = append(names, before[i].Name)
	}
	testenv.Consistently(t, 3*time.Second, func() error { return writes.Untouched(0, names...) })
	after := h.pods(app)
	uids := testenv.PodUIDs(after)
	for _, p := range before {
		assert.Equal(t, p.UID, uids[p.Name], "pod %s kept", p.Name)
	}
	// Status as OpenKruise's for its own pods once the new pod is upgraded
	// to v1 in place (what OpenKruise would do next) and counted.
	final := h.waitStatus("ok", "all four on v1", func(s appsv1alpha1.SidecarSetStatus) bool {
		return s.MatchedPods == 4 && s.UpdatedPods == 4 && s.ReadyPods == 4 && s.UpdatedReadyPods == 4
	}).Status
	final.MatchedPods, final.UpdatedPods, final.ReadyPods, final.UpdatedReadyPods = 3, 3, 3, 3
	final.Conditions = nil
	assert.Equal(t, okStatus, final)
	require.NoError(t, writes.Untouched(0, names...))
}
