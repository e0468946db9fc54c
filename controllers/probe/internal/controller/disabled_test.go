package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillafake "github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// With PodProbeMarkerGate off, a marker gets a Warning event and
// Enabled=False once the informer has synced and the refusal runs.
func TestDisabledReportsMarkers(t *testing.T) {
	kube := kubefake.NewClientset()
	client := flotillafake.NewSimpleClientset(&appsv1alpha1.PodProbeMarker{ //nolint:staticcheck // NewClientset lacks the CRD schemas for its field manager
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", Generation: 3}})
	flotInf := flotillainformers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(10)
	o := controller.DefaultQueueOptions()
	o.DisableInitialDelay = true
	d, err := NewDisabled(wiring.Deps{Kube: kube, Client: client, KubeInformers: informers.NewSharedInformerFactory(kube, 0),
		Informers: flotInf, Recorder: rec, QueueOptions: o}, "because of the test")
	require.NoError(t, err)
	assert.Equal(t, Name+"-disabled", d.Name())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	flotInf.Start(ctx.Done())
	go func() { done <- d.Run(ctx, 1) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
		flotInf.Shutdown()
	}()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m, err := client.AppsV1alpha1().PodProbeMarkers("ns").Get(ctx, "m", metav1.GetOptions{})
		require.NoError(c, err)
		cond := meta.FindStatusCondition(m.Status.Conditions, appsv1alpha1.PodProbeMarkerEnabled)
		require.NotNil(c, cond)
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
		assert.Equal(c, ReasonDisabled, cond.Reason)
		assert.Equal(c, int64(3), cond.ObservedGeneration)
	}, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, <-rec.Events, "Warning "+ReasonDisabled+" Not acted on: no probe is placed and no pod is marked, because of the test")
}
