package inplaceclient

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/inplace"
)

// t0 is the fixed clock of these tests.
var t0 = time.Date(2022, 3, 22, 9, 6, 55, 0, time.UTC)

const (
	ctlOldRev = "web-5f7b8c9d4"
	ctlNewRev = "web-6c8d9f7b5"
)

// ctlPod is a running CloneSet pod at ctlOldRev with the InPlaceUpdateReady
// gate, every condition True, and containers main (nginx:1.27) and log.
func ctlPod() *corev1.Pod {
	at := metav1.NewTime(t0.Add(-time.Hour))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "web-abcde", ResourceVersion: "5",
			Labels: map[string]string{"app": "web", pub.ControllerRevisionHashLabelKey: ctlOldRev, pub.LifecycleStateKey: "Normal"},
		},
		Spec: corev1.PodSpec{
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}},
			Containers:     []corev1.Container{{Name: "main", Image: "nginx:1.27"}, {Name: "log", Image: "fluent-bit:3.0"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
			},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "main", Image: "nginx:1.27", ImageID: "sha-main-1", Ready: true},
				{Name: "log", Image: "fluent-bit:3.0", ImageID: "sha-log-1", Ready: true},
			},
		},
	}
}

// newClient is a fake clientset holding objs whose pod patches honour
// dryRun (the fake's tracker would store them): the patched pod is returned,
// nothing is stored.
func newClient(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	c.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		if !isDryRun(a) {
			return false, nil, nil
		}
		obj, err := c.Tracker().Get(a.GetResource(), a.GetNamespace(), pa.GetName())
		if err != nil {
			return true, nil, err
		}
		doc, err := json.Marshal(obj)
		if err != nil {
			return true, nil, err
		}
		if doc, err = strategicpatch.StrategicMergePatch(doc, pa.GetPatch(), corev1.Pod{}); err != nil {
			return true, nil, err
		}
		var out corev1.Pod
		return true, &out, json.Unmarshal(doc, &out)
	})
	return c
}

func isDryRun(a k8stesting.Action) bool {
	pa, ok := a.(k8stesting.PatchActionImpl)
	return ok && len(pa.PatchOptions.DryRun) > 0
}

// ctlVerbs lists the client's actions as verb/subresource, a dry run as
// dryrun-patch/.
func ctlVerbs(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		v := a.GetVerb()
		if isDryRun(a) {
			v = "dryrun-" + v
		}
		out = append(out, v+"/"+a.GetSubresource())
	}
	return out
}

// written is the pod as the i-th action (a patch) left it: the patches up
// to it applied to initial, the pod the client started with.
func written(t *testing.T, c *fake.Clientset, initial *corev1.Pod, i int) *corev1.Pod {
	t.Helper()
	require.Greater(t, len(c.Actions()), i)
	doc, err := json.Marshal(initial)
	require.NoError(t, err)
	for _, a := range c.Actions()[:i+1] {
		if p, ok := a.(k8stesting.PatchAction); ok && !isDryRun(a) {
			doc, err = strategicpatch.StrategicMergePatch(doc, p.GetPatch(), corev1.Pod{})
			require.NoError(t, err)
		}
	}
	_, ok := c.Actions()[i].(k8stesting.PatchAction)
	require.True(t, ok, "action %d is %s", i, c.Actions()[i].GetVerb())
	var out corev1.Pod
	require.NoError(t, json.Unmarshal(doc, &out))
	return &out
}

// dryRunPod is initial with the patch of action a applied.
func dryRunPod(t *testing.T, initial *corev1.Pod, a k8stesting.Action) *corev1.Pod {
	t.Helper()
	require.True(t, isDryRun(a), "action %s is not a dry run", a.GetVerb())
	doc, err := json.Marshal(initial)
	require.NoError(t, err)
	doc, err = strategicpatch.StrategicMergePatch(doc, a.(k8stesting.PatchAction).GetPatch(), corev1.Pod{})
	require.NoError(t, err)
	var out corev1.Pod
	require.NoError(t, json.Unmarshal(doc, &out))
	return &out
}

// patchedResourceVersion is the resourceVersion precondition of patch action a.
func patchedResourceVersion(t *testing.T, a k8stesting.Action) string {
	t.Helper()
	var patch struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &patch))
	return patch.Metadata.ResourceVersion
}

func stored(t *testing.T, c *fake.Clientset) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods("ns").Get(context.Background(), "web-abcde", metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

func podCondition(p *corev1.Pod, ct corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ct {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func image(p *corev1.Pod, name string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

func decodeState(t *testing.T, p *corev1.Pod) *pub.InPlaceUpdateState {
	t.Helper()
	s, err := inplace.DecodeState(p)
	require.NoError(t, err)
	require.NotNil(t, s, "no %s annotation", pub.InPlaceUpdateStateKey)
	return s
}

// kubeletRuns makes the stored pod report image for container main with a
// new imageID, as the kubelet does once the restarted container runs.
func kubeletRuns(t *testing.T, c *fake.Clientset, img, imageID string) *corev1.Pod {
	t.Helper()
	p := stored(t, c)
	p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "main", Image: img, ImageID: imageID, Ready: true}
	out, err := c.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	require.NoError(t, err)
	c.ClearActions()
	return out
}

// assertTime compares instants (decoded times carry time.Local).
func assertTime(t *testing.T, want time.Time, got metav1.Time, msg string) {
	t.Helper()
	assert.True(t, got.Time.Equal(want), "%s: got %v, want %v", msg, got.Time, want)
}

// assertBatches checks a containerBatchesRecord of one batch.
func assertBatches(t *testing.T, got []pub.InPlaceUpdateContainerBatch, at time.Time, containers ...string) {
	t.Helper()
	if assert.Len(t, got, 1) {
		assertTime(t, at, got[0].Timestamp, "batch timestamp")
		assert.Equal(t, containers, got[0].Containers)
	}
}

func updateReq(grace int32) UpdateRequest {
	return UpdateRequest{
		Revision:           ctlNewRev,
		Spec:               inplace.Spec{ContainerImages: map[string]string{"main": "nginx:1.28"}},
		Labels:             map[string]string{pub.ControllerRevisionHashLabelKey: ctlNewRev, pub.PodTemplateHashLabelKey: "6c8d9f7b5"},
		Annotations:        map[string]string{"example.com/note": "updated"},
		Mutate:             func(p *corev1.Pod) { p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateUpdating) },
		GracePeriodSeconds: grace,
	}
}

func TestControlUpdate(t *testing.T) {
	ctx := context.Background()
	cached := ctlPod()
	before := cached.DeepCopy()
	client := newClient(cached.DeepCopy())
	ctl := New(client, clocktesting.NewFakeClock(t0))

	out, err := ctl.Update(ctx, cached, updateReq(0))
	require.NoError(t, err)
	assert.Equal(t, before, cached, "cached pod modified")
	require.Equal(t, []string{"dryrun-patch/", "patch/status", "patch/"}, ctlVerbs(client))

	// 0. The pod write as a dry run, before the pod leaves service: the same
	// change on the cached resourceVersion.
	dry := dryRunPod(t, before, client.Actions()[0])
	assert.Equal(t, "5", patchedResourceVersion(t, client.Actions()[0]))
	assert.Equal(t, "nginx:1.28", image(dry, "main"))
	assert.Equal(t, ctlNewRev, decodeState(t, dry).Revision)

	// 1. The status write: InPlaceUpdateReady=False and Ready recomputed, the
	// containers not yet touched.
	st := written(t, client, before, 1)
	assert.Equal(t, "nginx:1.27", image(st, "main"))
	ipr := podCondition(st, pub.InPlaceUpdateReady)
	require.NotNil(t, ipr)
	assert.Equal(t, corev1.ConditionFalse, ipr.Status)
	assert.Equal(t, inplace.ReasonStartInPlaceUpdate, ipr.Reason)
	assertTime(t, t0, ipr.LastTransitionTime, "lastTransitionTime")
	ready := podCondition(st, corev1.PodReady)
	assert.Equal(t, corev1.ConditionFalse, ready.Status, "Ready must drop in the same write")
	assertTime(t, t0, ready.LastTransitionTime, "lastTransitionTime")

	// 2. The pod write: image, labels, annotations, state, Mutate.
	p := written(t, client, before, 2)
	assert.Equal(t, dry.Spec, p.Spec, "what the dry run asked")
	assert.Equal(t, dry.Labels, p.Labels)
	assert.Equal(t, dry.Annotations, p.Annotations)
	assert.Equal(t, "nginx:1.28", image(p, "main"))
	assert.Equal(t, "fluent-bit:3.0", image(p, "log"))
	assert.Equal(t, ctlNewRev, p.Labels[pub.ControllerRevisionHashLabelKey])
	assert.Equal(t, "6c8d9f7b5", p.Labels[pub.PodTemplateHashLabelKey])
	assert.Equal(t, "web", p.Labels["app"])
	assert.Equal(t, string(pub.LifecycleStateUpdating), p.Labels[pub.LifecycleStateKey], "Mutate applied")
	assert.Equal(t, "updated", p.Annotations["example.com/note"])
	assert.NotContains(t, p.Annotations, pub.InPlaceUpdateGraceKey)
	assert.Equal(t, corev1.ConditionFalse, podCondition(p, pub.InPlaceUpdateReady).Status, "built on the status just written")
	state := decodeState(t, p)
	assert.Equal(t, ctlNewRev, state.Revision)
	assertTime(t, t0, state.UpdateTimestamp, "updateTimestamp")
	assert.True(t, state.UpdateImages)
	assert.Equal(t, map[string]pub.InPlaceUpdateContainerStatus{"main": {ImageID: "sha-main-1"}}, state.LastContainerStatuses)
	assertBatches(t, state.ContainerBatchesRecord, t0, "main")

	assert.Equal(t, stored(t, client), out, "returns the pod as written")
	assert.Equal(t, p.Spec, out.Spec)
}

func TestControlUpdateWithoutGate(t *testing.T) {
	cached := ctlPod()
	cached.Spec.ReadinessGates = nil
	cached.Status.Conditions = cached.Status.Conditions[:2]
	client := newClient(cached.DeepCopy())
	_, err := New(client, clocktesting.NewFakeClock(t0)).Update(context.Background(), cached, updateReq(0))
	require.NoError(t, err)
	assert.Equal(t, []string{"patch/"}, ctlVerbs(client), "no InPlaceUpdateReady condition without the gate")
	p := stored(t, client)
	assert.Equal(t, "nginx:1.28", image(p, "main"))
	assert.Nil(t, podCondition(p, pub.InPlaceUpdateReady))
	assert.Equal(t, corev1.ConditionTrue, podCondition(p, corev1.PodReady).Status)
}

func TestControlUpdateRetriesOnConflict(t *testing.T) {
	cached := ctlPod()
	client := newClient(cached.DeepCopy())
	conflicts := 0
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "" && !isDryRun(a) && conflicts == 0 {
			conflicts++
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-abcde", nil)
		}
		return false, nil, nil
	})
	_, err := New(client, clocktesting.NewFakeClock(t0)).Update(context.Background(), cached, updateReq(0))
	require.NoError(t, err)
	// The re-read pod already shows InPlaceUpdateReady=False: no second dry
	// run or status write.
	assert.Equal(t, []string{"dryrun-patch/", "patch/status", "patch/", "get/", "patch/"}, ctlVerbs(client))
	assert.Equal(t, "nginx:1.28", image(stored(t, client), "main"))
}

func TestControlGracePeriod(t *testing.T) {
	ctx := context.Background()
	cached := ctlPod()
	client := newClient(cached.DeepCopy())
	clk := clocktesting.NewFakeClock(t0)
	ctl := New(client, clk)

	_, err := ctl.Update(ctx, cached, updateReq(30))
	require.NoError(t, err)
	require.Equal(t, []string{"dryrun-patch/", "patch/status", "patch/"}, ctlVerbs(client))

	p := stored(t, client)
	assert.Equal(t, "nginx:1.27", image(p, "main"), "containers wait for the grace period")
	assert.Equal(t, corev1.ConditionFalse, podCondition(p, pub.InPlaceUpdateReady).Status)
	assert.Equal(t, ctlNewRev, p.Labels[pub.ControllerRevisionHashLabelKey], "labels are written at once")
	assert.Equal(t, string(pub.LifecycleStateUpdating), p.Labels[pub.LifecycleStateKey])
	raw, ok := pub.GetInPlaceUpdateGrace(p)
	require.True(t, ok, "grace annotation written")
	g, err := inplace.DecodeGrace(raw)
	require.NoError(t, err)
	assert.Equal(t, inplace.GraceSpec{Revision: ctlNewRev, Spec: inplace.Spec{ContainerImages: map[string]string{"main": "nginx:1.28"}}, GraceSeconds: 30}, g)
	state := decodeState(t, p)
	assert.Equal(t, ctlNewRev, state.Revision)
	assertTime(t, t0, state.UpdateTimestamp, "updateTimestamp")
	assert.True(t, state.UpdateImages)
	assert.Empty(t, state.LastContainerStatuses, "no batch applied yet")
	assert.Empty(t, state.ContainerBatchesRecord)

	// Within the grace period: nothing written, refresh after the rest.
	client.ClearActions()
	clk.SetTime(t0.Add(10 * time.Second))
	res, err := ctl.Refresh(ctx, p)
	require.NoError(t, err)
	assert.False(t, res.Written)
	assert.Equal(t, 20*time.Second, res.RequeueAfter)
	assert.Same(t, p, res.Pod)
	assert.Empty(t, client.Actions())

	// Elapsed: the parked spec is applied and the grace annotation removed.
	clk.SetTime(t0.Add(31 * time.Second))
	res, err = ctl.Refresh(ctx, p)
	require.NoError(t, err)
	assert.True(t, res.Written)
	assert.Zero(t, res.RequeueAfter)
	assert.Equal(t, []string{"patch/"}, ctlVerbs(client))
	p = stored(t, client)
	assert.Equal(t, p, res.Pod)
	assert.Equal(t, "nginx:1.28", image(p, "main"))
	assert.Equal(t, "fluent-bit:3.0", image(p, "log"))
	assert.NotContains(t, p.Annotations, pub.InPlaceUpdateGraceKey)
	state = decodeState(t, p)
	assertTime(t, t0, state.UpdateTimestamp, "the update started when the grace period did")
	assert.Equal(t, map[string]pub.InPlaceUpdateContainerStatus{"main": {ImageID: "sha-main-1"}}, state.LastContainerStatuses)
	assertBatches(t, state.ContainerBatchesRecord, t0.Add(31*time.Second), "main")
}

func TestControlRefreshMarksReady(t *testing.T) {
	ctx := context.Background()
	client := newClient(ctlPod())
	clk := clocktesting.NewFakeClock(t0)
	ctl := New(client, clk)
	_, err := ctl.Update(ctx, ctlPod(), updateReq(0))
	require.NoError(t, err)
	clk.SetTime(t0.Add(time.Minute))

	// The kubelet still reports the old container: not done.
	p := stored(t, client)
	client.ClearActions()
	res, err := ctl.Refresh(ctx, p)
	require.NoError(t, err)
	assert.False(t, res.Written)
	assert.Empty(t, client.Actions())

	// The same imageID with the old image: still not done.
	p = kubeletRuns(t, client, "nginx:1.27", "sha-main-1")
	res, err = ctl.Refresh(ctx, p)
	require.NoError(t, err)
	assert.False(t, res.Written)
	assert.Empty(t, client.Actions())

	// A new imageID: InPlaceUpdateReady=True and Ready back to True.
	p = kubeletRuns(t, client, "docker.io/library/nginx:1.28", "sha-main-2")
	res, err = ctl.Refresh(ctx, p)
	require.NoError(t, err)
	assert.True(t, res.Written)
	assert.Equal(t, []string{"patch/status"}, ctlVerbs(client))
	p = stored(t, client)
	assert.Equal(t, p, res.Pod)
	ipr := podCondition(p, pub.InPlaceUpdateReady)
	assert.Equal(t, corev1.ConditionTrue, ipr.Status)
	assertTime(t, t0.Add(time.Minute), ipr.LastTransitionTime, "lastTransitionTime")
	ready := podCondition(p, corev1.PodReady)
	assert.Equal(t, corev1.ConditionTrue, ready.Status)
	assertTime(t, t0.Add(time.Minute), ready.LastTransitionTime, "lastTransitionTime")

	// Nothing left to do.
	client.ClearActions()
	res, err = ctl.Refresh(ctx, p)
	require.NoError(t, err)
	assert.False(t, res.Written)
	assert.Empty(t, client.Actions())
}

// The parked spec belongs to the revision the pod is labelled with: whatever
// the workload's target is by the time the grace period ends, the pod must
// get the images its label promises (a template change or a rollback during
// the grace period used to drop them and leave the pod labelled with a
// revision it never ran).
func TestControlRefreshGraceFollowsPodLabel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		podLabel  string
		grace     string
		wantImage string
	}{
		{"pod labelled with the parked revision: applied", ctlNewRev,
			`{"revision":"` + ctlNewRev + `","containerImages":{"main":"nginx:1.28"},"graceSeconds":30}`, "nginx:1.28"},
		{"pod labelled with its short hash: applied", "6c8d9f7b5",
			`{"revision":"` + ctlNewRev + `","containerImages":{"main":"nginx:1.28"},"graceSeconds":30}`, "nginx:1.28"},
		{"pod relabelled to another revision: dropped", "web-7a8b9c0d1",
			`{"revision":"` + ctlNewRev + `","containerImages":{"main":"nginx:1.28"},"graceSeconds":30}`, "nginx:1.27"},
		{"unreadable: dropped", ctlNewRev, `{not json`, "nginx:1.27"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			pod := ctlPod()
			pod.Labels[pub.ControllerRevisionHashLabelKey] = tc.podLabel
			state := inplace.NewState(ctlNewRev, inplace.Spec{ContainerImages: map[string]string{"main": "nginx:1.28"}}, t0)
			v, err := inplace.EncodeState(&state)
			require.NoError(t, err)
			pod.Annotations = map[string]string{pub.InPlaceUpdateStateKey: v, pub.InPlaceUpdateGraceKey: tc.grace}
			client := newClient(pod.DeepCopy())
			ctl := New(client, clocktesting.NewFakeClock(t0.Add(time.Hour))) // grace long over

			res, err := ctl.Refresh(ctx, pod)
			require.NoError(t, err)
			assert.True(t, res.Written)
			assert.Equal(t, []string{"patch/"}, ctlVerbs(client))
			p := stored(t, client)
			assert.NotContains(t, p.Annotations, pub.InPlaceUpdateGraceKey)
			assert.Equal(t, tc.wantImage, image(p, "main"))
			assert.Equal(t, tc.podLabel, p.Labels[pub.ControllerRevisionHashLabelKey], "the label is not touched")
		})
	}
}

func TestControlRefreshWithoutUpdate(t *testing.T) {
	client := newClient(ctlPod())
	res, err := New(client, clocktesting.NewFakeClock(t0)).Refresh(context.Background(), ctlPod())
	require.NoError(t, err)
	assert.False(t, res.Written)
	assert.Zero(t, res.RequeueAfter)
	assert.Empty(t, client.Actions())
}

// strandedPod is ctlPod as a controller that crashed (or lost its Lease)
// between Update's two writes left it: InPlaceUpdateReady and Ready False,
// no state annotation, the old images.
func strandedPod() *corev1.Pod {
	p := ctlPod()
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == pub.InPlaceUpdateReady || c.Type == corev1.PodReady {
			c.Status, c.LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(t0)
			if c.Type == pub.InPlaceUpdateReady {
				c.Reason = inplace.ReasonStartInPlaceUpdate
			}
		}
	}
	return p
}

// Issue 26 item 4: a pod left InPlaceUpdateReady=False with no update in
// flight gets the gate (and Ready) back; the write is for the version judged
// only (a conflict is returned, not retried on a re-read pod).
func TestControlRefreshHealsStrandedGate(t *testing.T) {
	ctx := context.Background()
	client := newClient(strandedPod())
	ctl := New(client, clocktesting.NewFakeClock(t0.Add(time.Minute)))

	res, err := ctl.Refresh(ctx, strandedPod())
	require.NoError(t, err)
	assert.True(t, res.Written)
	assert.Equal(t, []string{"patch/status"}, ctlVerbs(client))
	p := stored(t, client)
	assert.Equal(t, p, res.Pod)
	ipr := podCondition(p, pub.InPlaceUpdateReady)
	assert.Equal(t, corev1.ConditionTrue, ipr.Status)
	assert.Empty(t, ipr.Reason)
	assertTime(t, t0.Add(time.Minute), ipr.LastTransitionTime, "lastTransitionTime")
	assert.Equal(t, corev1.ConditionTrue, podCondition(p, corev1.PodReady).Status, "Ready recomputed from the gates")
	assert.Equal(t, "nginx:1.27", image(p, "main"), "the spec is not touched")
	assert.NotContains(t, p.Annotations, pub.InPlaceUpdateStateKey)

	// Healed: nothing more to do.
	client.ClearActions()
	res, err = ctl.Refresh(ctx, p)
	require.NoError(t, err)
	assert.False(t, res.Written)
	assert.Empty(t, client.Actions())

	// Judged on a stale copy: the conflict is returned, nothing retried.
	client = newClient(strandedPod())
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-abcde", nil)
	})
	_, err = New(client, clocktesting.NewFakeClock(t0)).Refresh(ctx, strandedPod())
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Equal(t, []string{"patch/status"}, ctlVerbs(client))
}

// Issue 26 item 4, crash injection at the seam: the pod write after the
// status write fails (here an API server error; a crash or a lost Lease
// leaves the same pod). The next Refresh finds the gate False with no update
// in flight and sets it True; a later Update starts afresh.
func TestControlUpdateInterruptedThenHealed(t *testing.T) {
	ctx := context.Background()
	client := newClient(ctlPod())
	fail := true
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if fail && a.GetSubresource() == "" && !isDryRun(a) {
			return true, nil, apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(t0)
	ctl := New(client, clk)
	_, err := ctl.Update(ctx, ctlPod(), updateReq(0))
	require.Error(t, err)
	assert.Equal(t, []string{"dryrun-patch/", "patch/status", "patch/"}, ctlVerbs(client))
	p := stored(t, client)
	require.Equal(t, corev1.ConditionFalse, podCondition(p, pub.InPlaceUpdateReady).Status, "stranded between the writes")
	require.Equal(t, corev1.ConditionFalse, podCondition(p, corev1.PodReady).Status)
	require.NotContains(t, p.Annotations, pub.InPlaceUpdateStateKey)

	fail = false
	client.ClearActions()
	clk.SetTime(t0.Add(time.Second))
	res, err := ctl.Refresh(ctx, p)
	require.NoError(t, err)
	require.True(t, res.Written)
	p = stored(t, client)
	assert.Equal(t, corev1.ConditionTrue, podCondition(p, pub.InPlaceUpdateReady).Status)
	assert.Equal(t, corev1.ConditionTrue, podCondition(p, corev1.PodReady).Status)

	// The rollout still wants the pod: the update starts afresh.
	client.ClearActions()
	_, err = ctl.Update(ctx, p, updateReq(0))
	require.NoError(t, err)
	assert.Equal(t, []string{"dryrun-patch/", "patch/status", "patch/"}, ctlVerbs(client))
	p = stored(t, client)
	assert.Equal(t, "nginx:1.28", image(p, "main"))
	assert.Equal(t, corev1.ConditionFalse, podCondition(p, pub.InPlaceUpdateReady).Status)
	assert.Equal(t, ctlNewRev, decodeState(t, p).Revision)
}

// Issue 26 item 4, rejected write: when admission refuses the pod write
// (the dry run shows it), Update writes nothing, so the pod stays Ready and
// in service; the error names the refusal. Other dry-run errors
// (conflict) re-read the pod.
func TestControlUpdateRejectedWritesNothing(t *testing.T) {
	ctx := context.Background()
	cached := ctlPod()
	client := newClient(cached.DeepCopy())
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if isDryRun(a) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-abcde",
				errors.New(`ValidatingAdmissionPolicy 'no-v2' denied request: image nginx:1.28 is not allowed`))
		}
		return false, nil, nil
	})
	_, err := New(client, clocktesting.NewFakeClock(t0)).Update(ctx, cached, updateReq(0))
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "the API error is kept: %v", err)
	assert.Contains(t, err.Error(), "image nginx:1.28 is not allowed")
	assert.Contains(t, err.Error(), "left in service")
	assert.Equal(t, []string{"dryrun-patch/"}, ctlVerbs(client), "nothing written")
	assert.Equal(t, cached, stored(t, client))

	// A conflict on the dry run: the pod is read again and the update goes on.
	client = newClient(cached.DeepCopy())
	conflicts := 0
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if isDryRun(a) && conflicts == 0 {
			conflicts++
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-abcde", nil)
		}
		return false, nil, nil
	})
	_, err = New(client, clocktesting.NewFakeClock(t0)).Update(ctx, cached, updateReq(0))
	require.NoError(t, err)
	assert.Equal(t, []string{"dryrun-patch/", "get/", "dryrun-patch/", "patch/status", "patch/"}, ctlVerbs(client))
}

// With a grace period the dry run asks about the write that will change the
// containers when it ends, not the annotation-only write made now: a
// refused image is refused before the pod leaves service.
func TestControlUpdateGraceDryRunsTheImages(t *testing.T) {
	cached := ctlPod()
	client := newClient(cached.DeepCopy())
	var asked *corev1.Pod
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !isDryRun(a) {
			return false, nil, nil
		}
		asked = dryRunPod(t, cached, a)
		if image(asked, "main") == "nginx:1.28" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-abcde", errors.New("image nginx:1.28 is not allowed"))
		}
		return false, nil, nil
	})
	_, err := New(client, clocktesting.NewFakeClock(t0)).Update(context.Background(), cached, updateReq(30))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "image nginx:1.28 is not allowed")
	assert.Equal(t, []string{"dryrun-patch/"}, ctlVerbs(client), "nothing written")
	assert.Equal(t, ctlNewRev, asked.Labels[pub.ControllerRevisionHashLabelKey], "the whole write was asked about")
	assert.Equal(t, cached, stored(t, client))
}
