package wiring

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	flotillafake "github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
)

func TestDepsRequire(t *testing.T) {
	kube, client := fake.NewClientset(), flotillafake.NewClientset()
	full := Deps{Kube: kube, Client: client, KubeInformers: informers.NewSharedInformerFactory(kube, 0),
		Informers: flotillainformers.NewSharedInformerFactory(client, 0), Recorder: record.NewFakeRecorder(1)}
	assert.NoError(t, full.Require("widgets"))
	for name, drop := range map[string]func(*Deps){
		"kube":           func(d *Deps) { d.Kube = nil },
		"client":         func(d *Deps) { d.Client = nil },
		"kube informers": func(d *Deps) { d.KubeInformers = nil },
		"informers":      func(d *Deps) { d.Informers = nil },
		"recorder":       func(d *Deps) { d.Recorder = nil },
	} {
		d := full
		drop(&d)
		assert.EqualError(t, d.Require("widgets"),
			"widgets: clients, informer factories and an event recorder are required", name)
	}
}

func TestDepsPassiveClock(t *testing.T) {
	assert.Equal(t, clock.RealClock{}, Deps{}.PassiveClock(), "none set: the real clock")
	fc := testingclock.NewFakeClock(time.Unix(1, 0))
	assert.Same(t, fc, Deps{Clock: fc}.PassiveClock().(*testingclock.FakeClock))
}
