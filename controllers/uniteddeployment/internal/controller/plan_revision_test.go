package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// The revision data is the template replaced wholesale, keys sorted, as OpenKruise computes it.
func TestRevisionData(t *testing.T) {
	ud := baseUD()
	ud.Spec.Template.DeploymentTemplate = &appsv1alpha1.DeploymentTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{Template: podTmpl()}}
	data, err := RevisionData(ud)
	require.NoError(t, err)
	var got map[string]map[string]map[string]any
	require.NoError(t, json.Unmarshal(data, &got))
	tmpl := got["spec"]["template"]
	assert.Equal(t, "replace", tmpl["$patch"])
	assert.Contains(t, tmpl, "deploymentTemplate")
	assert.Equal(t, `{"spec":{"template":{"$patch":"replace","deploymentTemplate":{"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},`+
		`"spec":{"selector":null,"strategy":{},"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},`+
		`"spec":{"containers":[{"image":"web:v1","name":"main","resources":{}}],"tolerations":[{"key":"base","operator":"Exists"}]}}}}}}}`, string(data),
		"the bytes OpenKruise v1.9 writes for this template")

	again, err := RevisionData(ud.DeepCopy())
	require.NoError(t, err)
	assert.Equal(t, data, again, "equal templates, equal bytes")
	ud.Spec.Replicas = ptr.To[int32](9)
	ud.Spec.Topology.Subsets = []appsv1alpha1.Subset{zone("a")}
	scaled, err := RevisionData(ud)
	require.NoError(t, err)
	assert.Equal(t, data, scaled, "replicas and topology are not part of a revision")

	rev, err := NewRevision(ud, 3, ptr.To[int32](0))
	require.NoError(t, err)
	assert.Equal(t, "web", rev.Labels["app"], "template labels")
	assert.Equal(t, int64(3), rev.Revision)
	assert.True(t, strings.HasPrefix(rev.Name, "web-"))
	assert.Equal(t, "UnitedDeployment", rev.OwnerReferences[0].Kind)
}
