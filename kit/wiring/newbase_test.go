package wiring

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/featuregate"
	clocktesting "k8s.io/utils/clock/testing"

	fakeclient "github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// NewBase passes the gates on (or registers Spec.Gates at their defaults)
// and builds image pre-download exactly when Spec.PreDownload is on.
func TestNewBase(t *testing.T) {
	on := features.MustNewGate(features.PreDownloadImageForInPlaceUpdate)
	require.NoError(t, on.SetFromMap(map[string]bool{string(features.PreDownloadImageForInPlaceUpdate): true}))
	for _, tc := range []struct {
		name     string
		gates    featuregate.MutableFeatureGate
		spec     workload.Spec
		wantJobs bool
	}{
		{name: "no pre-download gate", gates: on},
		{name: "gate on", gates: on, spec: workload.Spec{PreDownload: features.PreDownloadImageForInPlaceUpdate}, wantJobs: true},
		{name: "gate at its default (off)", spec: workload.Spec{
			Gates: []featuregate.Feature{features.PreDownloadImageForInPlaceUpdate}, PreDownload: features.PreDownloadImageForInPlaceUpdate,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube, client := fake.NewClientset(), fakeclient.NewClientset()
			d := Deps{
				Kube: kube, Client: client, KubeInformers: informers.NewSharedInformerFactory(kube, 0),
				Informers: flotillainformers.NewSharedInformerFactory(client, 0), Clock: clocktesting.NewFakeClock(time.Unix(0, 0)),
				QueueOptions: controller.DefaultQueueOptions(),
			}
			if tc.gates != nil {
				d.Gates = tc.gates
			}
			tc.spec.Name = "x"
			b, err := d.NewBase(tc.spec, func(context.Context, types.NamespacedName) error { return nil })
			require.NoError(t, err)
			require.NotNil(t, b.Gates)
			assert.Equal(t, tc.wantJobs, b.Jobs != nil)
			if tc.gates != nil {
				assert.Same(t, tc.gates, b.Gates)
			}
		})
	}
}
