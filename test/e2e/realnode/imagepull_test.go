package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/node/cri"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// The NodeImage tests run probe-agent with ImagePullJobGate (its NodeImage puller, CRI at the real node's
// containerd) as its ServiceAccount with a token bound to the node (so flotilla-probe-agent-own-node-images
// admits its status writes), and write the node's NodeImage spec themselves, as imagepulljob-controller would.
// Their images are test-owned variants (pullTestImage) and fronts of the local registry, removed from the node
// before and after. Not parallel: a node has one agent.

const pullTimeout = 2 * time.Minute

type pullStack struct {
	t                        *testing.T
	env                      *testenv.Env
	node, registry, endpoint string
	client                   versioned.Interface
	images                   cri.Images
	agent                    *framework.Process
}

func startPullStack(t *testing.T) *pullStack {
	t.Helper()
	env := testenv.Get(t)
	if realNode(t, env) == "" {
		t.Skip("no real node")
	}
	node, registry, endpoint := probeNode(t, env)
	s := &pullStack{t: t, env: env, node: node, registry: registry, endpoint: endpoint,
		client: versioned.NewForConfigOrDie(env.Config), images: nodeImages(t, endpoint)}
	framework.InstallLocalOverlay(t, env) // the agent's RBAC and admission policies
	s.startAgent()
	return s
}

func (s *pullStack) startAgent() {
	s.t.Helper()
	s.agent = startNodeAgent(s.t, s.env, s.node, s.endpoint, "KruiseDaemon=true,ImagePullJobGate=true")
}

// setImage puts image (name without tag) with spec into the node's NodeImage (created if there is none) and
// takes it out again when the test ends (the NodeImage too, if the test created it).
func (s *pullStack) setImage(name string, spec appsv1beta1.ImageSpec) {
	s.t.Helper()
	ctx := context.Background()
	nis := s.client.AppsV1beta1().NodeImages()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ni, err := nis.Get(ctx, s.node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = nis.Create(ctx, &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: s.node},
				Spec: appsv1beta1.NodeImageSpec{Images: map[string]appsv1beta1.ImageSpec{name: spec}}}, metav1.CreateOptions{})
			if err == nil {
				s.t.Cleanup(func() { _ = nis.Delete(context.Background(), s.node, metav1.DeleteOptions{}) })
			}
			return err
		}
		if err != nil {
			return err
		}
		if ni.Spec.Images == nil {
			ni.Spec.Images = map[string]appsv1beta1.ImageSpec{}
		}
		ni.Spec.Images[name] = spec
		_, err = nis.Update(ctx, ni, metav1.UpdateOptions{})
		return err
	})
	require.NoError(s.t, err)
	s.t.Cleanup(func() {
		_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ni, err := nis.Get(context.Background(), s.node, metav1.GetOptions{})
			if err != nil {
				return nil
			}
			delete(ni.Spec.Images, name)
			_, err = nis.Update(context.Background(), ni, metav1.UpdateOptions{})
			return err
		})
	})
}

// waitTag waits for the status of name:tag to satisfy cond.
func (s *pullStack) waitTag(name, tag string, cond func(appsv1beta1.ImageTagStatus) bool) appsv1beta1.ImageTagStatus {
	s.t.Helper()
	var got appsv1beta1.ImageTagStatus
	testenv.Eventually(s.t, pullTimeout, func() (bool, error) {
		ni, err := s.client.AppsV1beta1().NodeImages().Get(context.Background(), s.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, st := range ni.Status.ImageStatuses[name].Tags {
			if st.Tag == tag {
				got = st
				if cond(st) {
					return true, nil
				}
			}
		}
		return false, fmt.Errorf("%s:%s: %+v (agent running: %v)", name, tag, got, s.agent.Running())
	})
	return got
}

// pullSecret creates a dockerconfigjson secret for registry in the agent's namespace (where imagepulljob-controller
// copies a job's secrets) and returns its reference.
func (s *pullStack) pullSecret(name, registry, user, password string) []appsv1beta1.ReferenceObject {
	s.t.Helper()
	sec := dockerConfigSecret(registry, user, password)
	sec.Name, sec.Namespace = name, framework.AgentNamespace
	secrets := s.env.Kube.CoreV1().Secrets(framework.AgentNamespace)
	_ = secrets.Delete(context.Background(), name, metav1.DeleteOptions{})
	_, err := secrets.Create(context.Background(), &sec, metav1.CreateOptions{})
	require.NoError(s.t, err)
	s.t.Cleanup(func() { _ = secrets.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return []appsv1beta1.ReferenceObject{{Namespace: framework.AgentNamespace, Name: name}}
}

func tagSpec(tag string, version int64) appsv1beta1.ImageTagSpec {
	return appsv1beta1.ImageTagSpec{Tag: tag, Version: version, ImagePullPolicy: appsv1beta1.PullIfNotPresent,
		PullPolicy: &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To(int32(60)), BackoffLimit: ptr.To(int32(1))}}
}

func tagPhase(p appsv1beta1.ImagePullPhase) func(appsv1beta1.ImageTagStatus) bool {
	return func(s appsv1beta1.ImageTagStatus) bool { return s.Phase == p }
}

// TestNodeImagePullOnRealNode: the agent pulls an image absent from the node and reports it Succeeded with the
// runtime's image ID, which CRI ImageStatus then shows; from a registry that wants a login, a wrong pull secret
// fails with the registry's refusal in the message, and the right one (a new version of the tag) pulls.
func TestNodeImagePullOnRealNode(t *testing.T) {
	s := startPullStack(t)
	ctx := context.Background()
	const tag = "pulltest-agent"
	image := pullTestImage(t, s.registry, tag)
	name := strings.TrimSuffix(image, ":"+tag)
	removeFromNode(t, s.images, image)
	t.Cleanup(func() { removeFromNode(t, s.images, image) })

	start := time.Now()
	s.setImage(name, appsv1beta1.ImageSpec{Tags: []appsv1beta1.ImageTagSpec{tagSpec(tag, 1)}})
	st := s.waitTag(name, tag, tagPhase(appsv1beta1.ImagePhaseSucceeded))
	t.Logf("pulled %s in %v (NodeImage spec to status Succeeded)", image, time.Since(start).Round(time.Millisecond))
	img, err := cri.Present(ctx, s.images, image)
	require.NoError(t, err)
	require.NotNil(t, img, "status Succeeded, yet ImageStatus does not list %s", image)
	assert.Equal(t, name+"@"+img.Id, st.ImageID)
	assert.Equal(t, int64(1), st.Version)
	assert.Equal(t, int32(100), st.Progress)
	assert.NotNil(t, st.CompletionTime)

	locked := authRegistry(t, s.registry, "flotilla", "s3cret")
	lockedName := locked + "/flotilla/busybox"
	t.Cleanup(func() { removeFromNode(t, s.images, lockedName+":"+tag) })
	s.setImage(lockedName, appsv1beta1.ImageSpec{PullSecrets: s.pullSecret("flotilla-e2e-pull-wrong", locked, "flotilla", "wrong"),
		Tags: []appsv1beta1.ImageTagSpec{tagSpec(tag, 1)}})
	st = s.waitTag(lockedName, tag, tagPhase(appsv1beta1.ImagePhaseFailed))
	t.Logf("wrong secret: %s", st.Message)
	assert.Contains(t, st.Message, "401 Unauthorized")
	assert.NotNil(t, st.CompletionTime)
	img, err = cri.Present(ctx, s.images, lockedName+":"+tag)
	require.NoError(t, err)
	assert.Nil(t, img)

	s.setImage(lockedName, appsv1beta1.ImageSpec{PullSecrets: s.pullSecret("flotilla-e2e-pull-right", locked, "flotilla", "s3cret"),
		Tags: []appsv1beta1.ImageTagSpec{tagSpec(tag, 2)}})
	st = s.waitTag(lockedName, tag, func(st appsv1beta1.ImageTagStatus) bool {
		return st.Version == 2 && st.Phase == appsv1beta1.ImagePhaseSucceeded
	})
	img, err = cri.Present(ctx, s.images, lockedName+":"+tag)
	require.NoError(t, err)
	require.NotNil(t, img)
}

// TestNodeImagePullCrashOnRealNode: the agent is killed while its pull hangs (the registry holds the request);
// the status says Pulling. Restarted, it pulls again and reports Succeeded only once ImageStatus lists the image.
func TestNodeImagePullCrashOnRealNode(t *testing.T) {
	s := startPullStack(t)
	ctx := context.Background()
	const tag = "pulltest-crash"
	pullTestImage(t, s.registry, tag)
	front := &registryFront{}
	name := front.serve(t, s.registry) + "/flotilla/busybox"
	removeFromNode(t, s.images, name+":"+tag)
	t.Cleanup(func() { removeFromNode(t, s.images, name+":"+tag) })

	front.Hold()
	s.setImage(name, appsv1beta1.ImageSpec{Tags: []appsv1beta1.ImageTagSpec{tagSpec(tag, 1)}})
	s.waitTag(name, tag, tagPhase(appsv1beta1.ImagePhasePulling))
	killAgent(t, s.agent)
	img, err := cri.Present(ctx, s.images, name+":"+tag)
	require.NoError(t, err)
	require.Nil(t, img, "the held pull cannot have finished")

	front.Release()
	s.startAgent()
	st := s.waitTag(name, tag, tagPhase(appsv1beta1.ImagePhaseSucceeded))
	img, err = cri.Present(ctx, s.images, name+":"+tag)
	require.NoError(t, err)
	require.NotNil(t, img, "Succeeded, yet ImageStatus does not list the image")
	assert.Equal(t, name+"@"+img.Id, st.ImageID)
}
