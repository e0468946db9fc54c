package app

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/flotilla-dev/flotilla/controllers/uniteddeployment/internal/controller"
)

// The binary watches only the subset kinds the API server serves: a missing CRD must not keep the caches from
// syncing.
func TestServedKinds(t *testing.T) {
	cases := []struct {
		name      string
		resources []*metav1.APIResourceList
		want      []controller.Kind
	}{
		{name: "no Kruise CRDs", want: []controller.Kind{controller.KindDeployment, controller.KindStatefulSet}},
		{name: "CloneSet only", resources: []*metav1.APIResourceList{
			{GroupVersion: "apps.kruise.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "clonesets"}, {Name: "uniteddeployments"}}},
		}, want: []controller.Kind{controller.KindDeployment, controller.KindStatefulSet, controller.KindCloneSet}},
		{name: "both", resources: []*metav1.APIResourceList{
			{GroupVersion: "apps.kruise.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "clonesets"}}},
			{GroupVersion: "apps.kruise.io/v1beta1", APIResources: []metav1.APIResource{{Name: "statefulsets"}}},
		}, want: []controller.Kind{controller.KindDeployment, controller.KindStatefulSet, controller.KindCloneSet, controller.KindAdvancedStatefulSet}},
		{name: "the group without the kind", resources: []*metav1.APIResourceList{
			{GroupVersion: "apps.kruise.io/v1beta1", APIResources: []metav1.APIResource{{Name: "daemonsets"}}},
		}, want: []controller.Kind{controller.KindDeployment, controller.KindStatefulSet}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := kubefake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
			d.Resources = c.resources
			got, err := ServedKinds(context.Background(), d)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}
