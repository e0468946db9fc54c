package controller

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// udKind is the kind the ControllerRevisions' controllerRef names.
var udKind = appsv1alpha1.SchemeGroupVersion.WithKind("UnitedDeployment")

// RevisionData is the data of ud's ControllerRevision, as OpenKruise writes it: a strategic merge patch that
// replaces spec.template, {"spec":{"template":{…,"$patch":"replace"}}}, keys sorted. Equal templates give equal
// bytes, so the revision name (its hash) is the same in Flotilla and OpenKruise for the same template.
//
// Every object metadata of the template (the workload's, its pod template's, its volume claim templates') carries
// "creationTimestamp":null unless set, as OpenKruise v1.9's Kubernetes 1.32 types encode a zero timestamp (newer
// types omit it); see kit/revision.TemplatePatch.
func RevisionData(ud *appsv1alpha1.UnitedDeployment) ([]byte, error) {
	raw, err := json.Marshal(&ud.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("encode template: %w", err)
	}
	var template map[string]any
	if err := json.Unmarshal(raw, &template); err != nil {
		return nil, fmt.Errorf("decode template: %w", err)
	}
	for _, w := range template {
		workload, _ := w.(map[string]any)
		if workload == nil {
			continue
		}
		revision.NullCreationTimestamp(workload)
		spec, _ := workload["spec"].(map[string]any)
		if pod, _ := spec["template"].(map[string]any); pod != nil {
			revision.NullCreationTimestamp(pod)
		}
		claims, _ := spec["volumeClaimTemplates"].([]any)
		for _, c := range claims {
			if claim, _ := c.(map[string]any); claim != nil {
				revision.NullCreationTimestamp(claim)
			}
		}
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// NewRevision returns the unsaved revision of ud's current template, numbered number. Its labels are the
// template's labels (so a selector over them finds it) plus the hash label.
func NewRevision(ud *appsv1alpha1.UnitedDeployment, number int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	data, err := RevisionData(ud)
	if err != nil {
		return nil, err
	}
	labels, _ := templateMeta(ud)
	return revision.New(ud, udKind, labels, data, number, collisionCount), nil
}
