package webhook

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/workload"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// ValidateWorkloadSpread refuses what the CRD's schema and CEL cannot
// decide: percent maxReplicas summing over 100%, and a second
// WorkloadSpread on a workload another one already spreads (naming it).
func (h *Handlers) ValidateWorkloadSpread(_ context.Context, req kitwebhook.Request) kitwebhook.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return kitwebhook.Allowed()
	}
	var ws appsv1alpha1.WorkloadSpread
	if err := req.DecodeNamespacedObject(&ws); err != nil {
		return kitwebhook.Errored(http.StatusBadRequest, err)
	}
	others, err := h.Spreads.WorkloadSpreads(ws.Namespace).List(labels.Everything())
	if err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, fmt.Errorf("list workloadspreads: %w", err))
	}
	if errs := Validate(&ws, others); len(errs) > 0 {
		return kitwebhook.Invalid(errs.ToAggregate().Error())
	}
	return kitwebhook.Allowed()
}

// Validate returns the cross-field and cross-object errors of ws, each
// naming its field, as OpenKruise words them.
func Validate(ws *appsv1alpha1.WorkloadSpread, others []*appsv1alpha1.WorkloadSpread) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	sum := 0
	for i, s := range ws.Spec.Subsets {
		if s.MaxReplicas == nil || s.MaxReplicas.Type != intstr.String {
			continue
		}
		v, err := intstr.GetScaledValueFromIntOrPercent(s.MaxReplicas, 100, true)
		if err != nil || !strings.HasSuffix(s.MaxReplicas.StrVal, "%") {
			errs = append(errs, field.Invalid(spec.Child("subsets").Index(i).Child("maxReplicas"), s.MaxReplicas.String(), "maxReplicas is not valid for subset"))
			continue
		}
		sum += v
		if sum > 100 {
			errs = append(errs, field.Invalid(spec.Child("subsets").Index(i).Child("maxReplicas"), s.MaxReplicas.String(),
				"the sum of all subset's maxReplicas exceeds 100% is no permitted"))
			break
		}
	}
	if t := ws.Spec.TargetReference; t != nil {
		for _, o := range others {
			if o.Name == ws.Name || o.Spec.TargetReference == nil || o.DeletionTimestamp != nil {
				continue
			}
			if workload.KindOf(o.Spec.TargetReference) == workload.KindOf(t) && o.Spec.TargetReference.Name == t.Name {
				errs = append(errs, field.Invalid(spec.Child("targetRef"), fmt.Sprintf("%s/%s", t.Kind, t.Name),
					fmt.Sprintf("ws.spec.targetRef is in conflict with other WorkloadSpread %s", o.Name)))
				break
			}
		}
	}
	return errs
}
