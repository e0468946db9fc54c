package predownload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

func dsRevision(t *testing.T, name string, images map[string]string, labels map[string]string) *appsv1.ControllerRevision {
	t.Helper()
	tmpl := &corev1.PodTemplateSpec{}
	for _, c := range []string{"main", "sidecar"} {
		if img, ok := images[c]; ok {
			tmpl.Spec.Containers = append(tmpl.Spec.Containers, corev1.Container{Name: c, Image: img})
		}
	}
	data, err := revision.TemplatePatch(tmpl)
	require.NoError(t, err)
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: runtime.RawExtension{Raw: data}}
}

func TestDecideDaemonSet(t *testing.T) {
	v1 := dsRevision(t, "ds-h1", map[string]string{"main": "a:1", "sidecar": "s:1"}, nil)
	v2 := dsRevision(t, "ds-h2", map[string]string{"main": "a:2", "sidecar": "s:1"}, nil)
	v3 := dsRevision(t, "ds-h3", map[string]string{"main": "a:2", "sidecar": "s:1"}, nil)
	created := dsRevision(t, "ds-h2", map[string]string{"main": "a:2"}, map[string]string{pub.ImagePreDownloadCreatedKey: "true"})
	ignored := dsRevision(t, "ds-h2", map[string]string{"main": "a:2"}, map[string]string{pub.ImagePreDownloadIgnoredKey: "true"})
	cases := []struct {
		name   string
		in     DaemonSetInput
		action Action
		images map[string]string
	}{
		{name: "converged: delete jobs", in: DaemonSetInput{Old: []*appsv1.ControllerRevision{v1}, Update: v2, StatusHash: "h2", Desired: 4, Updated: 4}, action: DeleteJobs},
		{name: "status still on the old hash: not converged", in: DaemonSetInput{Old: []*appsv1.ControllerRevision{v1}, Update: v2, StatusHash: "h1", Desired: 4, Updated: 4, MaxUnavailable: 1},
			action: Create, images: map[string]string{"main": "a:2"}},
		{name: "new image of a changed container only", in: DaemonSetInput{Old: []*appsv1.ControllerRevision{v1}, Update: v2, StatusHash: "h2", Desired: 4, Updated: 1, MaxUnavailable: 1},
			action: Create, images: map[string]string{"main": "a:2"}},
		{name: "already created", in: DaemonSetInput{Update: created, Desired: 4, MaxUnavailable: 1}, action: Wait},
		{name: "already ignored", in: DaemonSetInput{Update: ignored, Desired: 4, MaxUnavailable: 1}, action: Wait},
		{name: "one batch: ignore", in: DaemonSetInput{Old: []*appsv1.ControllerRevision{v1}, Update: v2, Desired: 4, MaxUnavailable: 4}, action: Ignore},
		{name: "one batch but a partition: create", in: DaemonSetInput{Old: []*appsv1.ControllerRevision{v1}, Update: v2, Desired: 4, MaxUnavailable: 4, Partition: 1},
			action: Create, images: map[string]string{"main": "a:2"}},
		{name: "any old revision with another image counts", in: DaemonSetInput{Old: []*appsv1.ControllerRevision{v1, v2}, Update: v3, Desired: 4, MaxUnavailable: 1},
			action: Create, images: map[string]string{"main": "a:2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideDaemonSet(tc.in)
			assert.Equal(t, tc.action, d.Action, d.Reason)
			if tc.images != nil {
				assert.Equal(t, tc.images, d.Images)
			}
		})
	}
}
