// Package integration runs the real NodeImage and ImagePullJob reconcilers in-process against the local control
// plane (kit/testenv) with kwok nodes the test creates. The tests play the node agent: they write NodeImage status
// as the agent does. The agent itself is tested on the real node (test/e2e/realnode).
package integration

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/featuregate"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/imagepulljob"
	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/nodeimage"
	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/scope"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	waitTimeout = 60 * time.Second
	image       = "127.0.0.1:5050/flotilla/busybox:v2"
	imageName   = "127.0.0.1:5050/flotilla/busybox"
	imageTag    = "v2"
)

type harness struct {
	*lab.Lab
	nodes   []string
	agentNS string
	jobs    *testenv.Objects[*appsv1beta1.ImagePullJob]
	nis     *testenv.Objects[*appsv1beta1.NodeImage]
	// cached lists the NodeImages in the running controllers' cache (nil before startController).
	cached appslisters.NodeImageLister
}

// newHarness creates n kwok nodes of the test's own, a second namespace standing for the agent's, and the
// helpers; the controllers only see the test's nodes (scope.Options.NodeSelector).
func newHarness(t *testing.T, n int) *harness {
	h := &harness{Lab: lab.New(t, waitTimeout)}
	h.nodes = h.Env.KwokNodes(t, h.NS, n, nil)
	// Runs after the controller stopped (cleanups run last-registered first): the NodeImages of the test's nodes
	// would otherwise outlive them.
	t.Cleanup(func() {
		for _, n := range h.nodes {
			err := h.Client.AppsV1beta1().NodeImages().Delete(context.Background(), n, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete NodeImage %s: %v", n, err)
			}
		}
	})
	h.agentNS = h.Another().NS
	h.jobs = testenv.ObjectsOf(t, h.Client.AppsV1beta1().ImagePullJobs(h.NS), waitTimeout)
	h.jobs.Describe = func(j *appsv1beta1.ImagePullJob) string {
		b, _ := json.Marshal(map[string]any{"finalizers": j.Finalizers, "status": j.Status})
		return string(b)
	}
	h.nis = testenv.ObjectsOf(t, h.Client.AppsV1beta1().NodeImages(), waitTimeout)
	h.nis.Describe = func(ni *appsv1beta1.NodeImage) string {
		b, _ := json.Marshal(map[string]any{"labels": ni.Labels, "spec": ni.Spec, "status": ni.Status})
		return string(b)
	}
	return h
}

// both runs the two reconcilers of the binary as one controller (one informer start and stop).
type both [2]testenv.Controller

func (b both) Run(ctx context.Context, workers int) error {
	errs := make(chan error, 2)
	for _, c := range b {
		go func() { errs <- c.Run(ctx, workers) }()
	}
	return errors.Join(<-errs, <-errs)
}

func (h *harness) startController() (stop func()) {
	h.T.Helper()
	d := h.Deps("imagepulljob-test", h.Gates([]featuregate.Feature{features.KruiseDaemon}, map[featuregate.Feature]bool{features.KruiseDaemon: true}))
	o := scope.Options{AgentNamespace: h.agentNS, NodeSelector: labels.SelectorFromSet(labels.Set{testenv.TestNodeLabel: h.NS})}
	ni, err := nodeimage.NewWithOptions(d, o)
	require.NoError(h.T, err)
	job, err := imagepulljob.NewWithOptions(d, o)
	require.NoError(h.T, err)
	h.cached = d.Informers.Apps().V1beta1().NodeImages().Lister()
	return h.Start(both{ni, job}, 2, d)
}

// job is an ImagePullJob of image on the test's nodes (selected by their test label).
func (h *harness) job(name string, mutate func(*appsv1beta1.ImagePullJob)) *appsv1beta1.ImagePullJob {
	h.T.Helper()
	j := &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1beta1.ImagePullJobSpec{Image: image}}
	j.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{testenv.TestNodeLabel: h.NS}}}
	j.Spec.CompletionPolicy.Type = appsv1beta1.Always
	if mutate != nil {
		mutate(j)
	}
	return h.jobs.Create(j)
}

// tagOf returns the tag of the test image in the NodeImage's spec, nil if absent.
func tagOf(ni *appsv1beta1.NodeImage) *appsv1beta1.ImageTagSpec {
	for _, t := range ni.Spec.Images[imageName].Tags {
		if t.Tag == imageTag {
			return &t
		}
	}
	return nil
}

// withTag lists the test's nodes whose NodeImage carries the test image's tag.
func (h *harness) withTag() []string {
	h.T.Helper()
	var out []string
	for _, n := range h.nodes {
		ni, err := h.Client.AppsV1beta1().NodeImages().Get(context.Background(), n, metav1.GetOptions{})
		if err == nil && tagOf(ni) != nil {
			out = append(out, n)
		}
	}
	return out
}

// report writes the pull phase of the test image's tag into the node's NodeImage status, as the agent does (at
// the spec's version).
func (h *harness) report(node string, phase appsv1beta1.ImagePullPhase, message string) {
	h.T.Helper()
	h.nis.ModifyStatus(node, func(ni *appsv1beta1.NodeImage) {
		t := tagOf(ni)
		require.NotNil(h.T, t, "no tag on %s", node)
		now := metav1.Now()
		st := appsv1beta1.ImageTagStatus{Tag: imageTag, Phase: phase, Version: t.Version, StartTime: &now, Message: message}
		if phase == appsv1beta1.ImagePhaseSucceeded || phase == appsv1beta1.ImagePhaseFailed {
			st.CompletionTime, st.Progress = &now, 100
		}
		if ni.Status.ImageStatuses == nil {
			ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
		}
		ni.Status.ImageStatuses[imageName] = appsv1beta1.ImageStatus{Tags: []appsv1beta1.ImageTagStatus{st}}
		ni.Status.Desired = 1
	})
}

func (h *harness) waitStatus(name, what string, cond func(*appsv1beta1.ImagePullJobStatus) bool) *appsv1beta1.ImagePullJob {
	h.T.Helper()
	return h.jobs.WaitFor(name, what, func(j *appsv1beta1.ImagePullJob) bool { return cond(&j.Status) })
}

// waitNodeImages waits until every test node has its NodeImage, on the API server and in the running controllers' cache.
func (h *harness) waitNodeImages() {
	h.T.Helper()
	for _, n := range h.nodes {
		h.nis.WaitFor(n, "created", func(*appsv1beta1.NodeImage) bool { return true })
		if h.cached == nil {
			continue
		}
		// And in the controllers' cache: a job synced before it would select no node, and a job of
		// completionPolicy Always with no node completes at once (CI saw TestImagePullJobTTLAndCleanup lose its job so).
		testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
			_, err := h.cached.Get(n)
			return err == nil, nil
		})
	}
}
