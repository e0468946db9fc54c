package wiring

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	fakeclient "github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// NewCore refuses Deps a reconciler cannot run without, naming it, and otherwise hands the reconciler d's clients,
// clock and recorder and a queue whose keys reach sync.
func TestNewCore(t *testing.T) {
	kube, client := fake.NewClientset(), fakeclient.NewClientset()
	d := Deps{
		Kube: kube, Client: client, KubeInformers: informers.NewSharedInformerFactory(kube, 0),
		Informers: flotillainformers.NewSharedInformerFactory(client, 0), Recorder: record.NewFakeRecorder(1),
		QueueOptions: controller.DefaultQueueOptions(),
	}

	noRecorder := d
	noRecorder.Recorder = nil
	_, err := NewCore(noRecorder, "thing", func(context.Context, string) error { return nil })
	require.ErrorContains(t, err, "thing: ")

	core, err := NewCore(d, "thing", func(context.Context, string) error { return nil })
	require.NoError(t, err)
	assert.Same(t, kube, core.Kube)
	assert.Same(t, client, core.Client)
	assert.Equal(t, d.Recorder, core.Recorder)
	assert.Equal(t, clock.RealClock{}, core.Clock, "the real clock when Deps has none")
	assert.Equal(t, "thing", core.Name())

	fake := clocktesting.NewFakeClock(time.Unix(0, 0))
	d.Clock = fake
	got := make(chan string, 1)
	core, err = NewCore(d, "thing", func(_ context.Context, key string) error { got <- key; return nil })
	require.NoError(t, err)
	assert.Same(t, fake, core.Clock)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- core.Run(ctx, 1) }()
	core.Queue.Add("k")
	select {
	case key := <-got:
		assert.Equal(t, "k", key)
	case <-time.After(10 * time.Second):
		t.Fatal("the queued key never reached sync")
	}
	cancel()
	require.NoError(t, <-done)
}
