package imagepuller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/node/cri"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const node = "n1"

// harness runs a Worker against fake clientsets and a FakeImages until the test ends.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	images *cri.FakeImages
	cancel context.CancelFunc
	done   chan struct{}
}

func secret(name, user string) *corev1.Secret {
	cfg := fmt.Sprintf(`{"auths":{"reg.example.com":{"username":%q,"password":"pw"}}}`, user)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-node", Name: name},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}}
}

func run(t *testing.T, ni *appsv1beta1.NodeImage, images *cri.FakeImages, clk clock.WithTicker, maxPulls int, objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewSimpleClientset(ni)
	return start(t, client, images, clk, maxPulls, objs...)
}

func start(t *testing.T, client *fake.Clientset, images *cri.FakeImages, clk clock.WithTicker, maxPulls int, objs ...runtime.Object) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inf := flotillainformers.NewSharedInformerFactory(client, 0)
	kube := kubefake.NewSimpleClientset(objs...)
	w, err := New(Deps{NodeName: node, NodeImages: client.AppsV1beta1().NodeImages(),
		Secrets:           func(ns string) SecretGetter { return kube.CoreV1().Secrets(ns) },
		NodeImageInformer: inf.Apps().V1beta1().NodeImages().Informer(), Images: images,
		Clock: clk, Recorder: record.NewFakeRecorder(100), Queue: controller.DefaultQueueOptions(), MaxConcurrentPulls: maxPulls})
	require.NoError(t, err)
	inf.Start(ctx.Done())
	h := &harness{t: t, client: client, images: images, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(h.done); _ = w.Run(ctx, 1) }()
	t.Cleanup(h.stop)
	return h
}

// stop ends the worker (as an agent's death would: its in-memory tasks go with it).
func (h *harness) stop() {
	h.cancel()
	<-h.done
}

func (h *harness) get() *appsv1beta1.NodeImage {
	ni, err := h.client.AppsV1beta1().NodeImages().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(h.t, err)
	return ni
}

// waitTag waits for image:tag's status to satisfy cond and returns it.
func (h *harness) waitTag(image, tag string, cond func(appsv1beta1.ImageTagStatus) bool) appsv1beta1.ImageTagStatus {
	h.t.Helper()
	var got appsv1beta1.ImageTagStatus
	testenv.Eventually(h.t, 10*time.Second, func() (bool, error) {
		for _, st := range h.get().Status.ImageStatuses[image].Tags {
			if st.Tag == tag {
				got = st
				if cond(st) {
					return true, nil
				}
			}
		}
		return false, fmt.Errorf("%s:%s status %+v", image, tag, got)
	})
	return got
}

func phase(p appsv1beta1.ImagePullPhase) func(appsv1beta1.ImageTagStatus) bool {
	return func(s appsv1beta1.ImageTagStatus) bool { return s.Phase == p }
}

func nodeImage(images map[string]appsv1beta1.ImageSpec) *appsv1beta1.NodeImage {
	return &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: appsv1beta1.NodeImageSpec{Images: images}}
}

func noRetry() *appsv1beta1.ImageTagPullPolicy {
	return &appsv1beta1.ImageTagPullPolicy{BackoffLimit: ptr.To(int32(0))}
}

// An absent image is pulled and reported Succeeded with kruise-daemon's imageID; the status counts it.
func TestPullsAbsentImage(t *testing.T) {
	images := cri.NewFakeImages(map[string]string{"reg.example.com/app:v1": ""})
	h := run(t, nodeImage(map[string]appsv1beta1.ImageSpec{"reg.example.com/app": {Tags: []appsv1beta1.ImageTagSpec{{Tag: "v1", Version: 3}}}}),
		images, clock.RealClock{}, 0)
	st := h.waitTag("reg.example.com/app", "v1", phase(appsv1beta1.ImagePhaseSucceeded))
	assert.Equal(t, int64(3), st.Version)
	assert.Equal(t, int32(100), st.Progress)
	assert.Equal(t, "reg.example.com/app@sha256:reg.example.com/app:v1", st.ImageID)
	assert.NotNil(t, st.StartTime)
	assert.NotNil(t, st.CompletionTime)
	ni := h.get()
	assert.Equal(t, int32(1), ni.Status.Desired)
	assert.Equal(t, int32(1), ni.Status.Succeeded)
	assert.Equal(t, 1, images.PullCount("reg.example.com/app:v1"))
}

// The credentials come from the image's pull secrets: the right one pulls, a wrong one fails with the runtime's
// message, a secret the agent cannot read is skipped.
func TestPullSecrets(t *testing.T) {
	images := cri.NewFakeImages(map[string]string{"reg.example.com/app:v1": "alice", "reg.example.com/other:v1": "alice"})
	ref := func(name string) []appsv1beta1.ReferenceObject {
		return []appsv1beta1.ReferenceObject{{Namespace: "flotilla-node", Name: "missing"}, {Namespace: "flotilla-node", Name: name}}
	}
	h := run(t, nodeImage(map[string]appsv1beta1.ImageSpec{
		"reg.example.com/app":   {PullSecrets: ref("right"), Tags: []appsv1beta1.ImageTagSpec{{Tag: "v1", PullPolicy: noRetry()}}},
		"reg.example.com/other": {PullSecrets: ref("wrong"), Tags: []appsv1beta1.ImageTagSpec{{Tag: "v1", PullPolicy: noRetry()}}},
	}), images, clock.RealClock{}, 0, secret("right", "alice"), secret("wrong", "mallory"))
	h.waitTag("reg.example.com/app", "v1", phase(appsv1beta1.ImagePhaseSucceeded))
	st := h.waitTag("reg.example.com/other", "v1", phase(appsv1beta1.ImagePhaseFailed))
	assert.Contains(t, st.Message, "401 Unauthorized")
	assert.Contains(t, st.Message, `as "mallory"`)
	assert.NotNil(t, st.CompletionTime)
	assert.Equal(t, int32(1), h.get().Status.Failed)
}

// A failing pull is retried backoffLimit times, waiting 1 s, 2 s, … (on the worker's clock) between attempts.
func TestBackoffLimit(t *testing.T) {
	images := cri.NewFakeImages(map[string]string{})
	clk := clocktesting.NewFakeClock(t0)
	h := run(t, nodeImage(map[string]appsv1beta1.ImageSpec{"reg.example.com/gone": {Tags: []appsv1beta1.ImageTagSpec{
		{Tag: "v1", PullPolicy: &appsv1beta1.ImageTagPullPolicy{BackoffLimit: ptr.To(int32(2))}}}}}), images, clk, 0)
	var waited []int
	testenv.Eventually(t, 10*time.Second, func() (bool, error) {
		if clk.HasWaiters() {
			waited = append(waited, images.PullCount("reg.example.com/gone:v1"))
			clk.Step(time.Minute)
		}
		n := len(h.get().Status.ImageStatuses["reg.example.com/gone"].Tags)
		return n == 1 && h.get().Status.ImageStatuses["reg.example.com/gone"].Tags[0].Phase == appsv1beta1.ImagePhaseFailed, nil
	})
	assert.Equal(t, 3, images.PullCount("reg.example.com/gone:v1"), "one pull and two retries")
	assert.Equal(t, []int{1, 2}, waited, "a backoff after each failure but the last")
}

// At most MaxConcurrentPulls pulls run; the others wait (phase Waiting) for a slot.
func TestConcurrencyBound(t *testing.T) {
	images := cri.NewFakeImages(map[string]string{"r/a:1": "", "r/a:2": ""})
	images.SetHold("r/a:1", true)
	images.SetHold("r/a:2", true)
	h := run(t, nodeImage(map[string]appsv1beta1.ImageSpec{"r/a": {Tags: []appsv1beta1.ImageTagSpec{{Tag: "1"}, {Tag: "2"}}}}),
		images, clock.RealClock{}, 1)
	testenv.Eventually(t, 10*time.Second, func() (bool, error) {
		if s := h.get().Status; s.Pulling != 1 || s.Waiting != 1 {
			return false, fmt.Errorf("pulling %d waiting %d", s.Pulling, s.Waiting)
		}
		return true, nil
	})
	assert.Equal(t, 1, images.Calls(), "one PullImage in flight")
}

// Crash safety: a tag the status shows Pulling (the agent died mid-pull) is pulled again by a new agent and
// reported Succeeded only with the image present; a tag finished at the spec's version is not pulled again.
func TestRestartResumes(t *testing.T) {
	images := cri.NewFakeImages(map[string]string{"r/a:1": "", "r/a:2": ""})
	images.SetHold("r/a:1", true)
	ni := nodeImage(map[string]appsv1beta1.ImageSpec{"r/a": {Tags: []appsv1beta1.ImageTagSpec{{Tag: "1", Version: 1}, {Tag: "2", Version: 1}}}})
	h := run(t, ni, images, clock.RealClock{}, 0)
	h.waitTag("r/a", "1", phase(appsv1beta1.ImagePhasePulling))
	h.waitTag("r/a", "2", phase(appsv1beta1.ImagePhaseSucceeded))
	h.stop()
	assert.Empty(t, images.ID("r/a:1"), "the held pull never finished")

	images.SetHold("r/a:1", false)
	h2 := start(t, h.client, images, clock.RealClock{}, 0)
	st := h2.waitTag("r/a", "1", phase(appsv1beta1.ImagePhaseSucceeded))
	assert.NotEmpty(t, images.ID("r/a:1"))
	assert.Equal(t, int64(1), st.Version)
	assert.Equal(t, 2, images.PullCount("r/a:1"), "the interrupted pull is redone")
	assert.Equal(t, 1, images.PullCount("r/a:2"), "the finished one is not")
	assert.Equal(t, int32(2), h2.get().Status.Succeeded)
}

// A new version of a tag is pulled again (imagePullPolicy Always); IfNotPresent takes a present image as pulled.
func TestVersionAndPullPolicy(t *testing.T) {
	images := cri.NewFakeImages(map[string]string{"r/a:1": ""})
	images.Present["r/a:1"] = "sha256:old"
	h := run(t, nodeImage(map[string]appsv1beta1.ImageSpec{"r/a": {Tags: []appsv1beta1.ImageTagSpec{
		{Tag: "1", Version: 1, ImagePullPolicy: appsv1beta1.PullIfNotPresent}}}}), images, clock.RealClock{}, 0)
	st := h.waitTag("r/a", "1", phase(appsv1beta1.ImagePhaseSucceeded))
	assert.Equal(t, "r/a@sha256:old", st.ImageID)
	assert.Equal(t, 0, images.PullCount("r/a:1"))

	ni := h.get()
	img := ni.Spec.Images["r/a"]
	img.Tags[0].Version, img.Tags[0].ImagePullPolicy = 2, appsv1beta1.PullAlways
	_, err := h.client.AppsV1beta1().NodeImages().Update(context.Background(), ni, metav1.UpdateOptions{})
	require.NoError(t, err)
	st = h.waitTag("r/a", "1", func(s appsv1beta1.ImageTagStatus) bool {
		return s.Version == 2 && s.Phase == appsv1beta1.ImagePhaseSucceeded
	})
	assert.Equal(t, "r/a@sha256:r/a:1", st.ImageID)
	assert.Equal(t, 1, images.PullCount("r/a:1"))
}
