package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// A pass that is short of pods but may create none (scaleStrategy.
// maxUnavailable spent) deletes nothing either — not even a pod already in
// PreparingDelete — and says so with a Warning event.
func TestScaleUpLimitedDeletesNothing(t *testing.T) {
	kube := fake.NewClientset()
	rec := record.NewFakeRecorder(10)
	c := &Controller{Base: &workload.Base{Kube: kube, PodControl: podclient.New(kube), Recorder: rec}, scaleExp: expectations.NewScale[types.NamespacedName]()}
	cs := testCloneSet(3, func(cs *appsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.MaxUnavailable = ios("1") })
	st := testState(cs,
		testPod("unready", notReady()),
		testPod("leaving", inState(pub.LifecycleStatePreparingDelete), withLabel(pub.SpecifiedDeleteKey, "true")),
	)
	wrote, err := c.scale(t.Context(), st)
	require.NoError(t, err)
	assert.False(t, wrote)
	assert.Empty(t, kube.Actions(), "no create, no delete")
	require.Len(t, rec.Events, 1)
	assert.Contains(t, <-rec.Events, "Warning ScaleUpLimited")
}
