package webhook

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/selector"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// The budget validation's path, entry and metrics names, as in
// deploy/components/pub.
const (
	PubPath        = "/validate-podunavailablebudget"
	PubWebhookName = "podunavailablebudgets.pub.flotilla.dev"
	PubHandlerName = "pub-validate-podunavailablebudget"
)

var pubResource = policyv1alpha1.SchemeGroupVersion.WithResource("podunavailablebudgets")

// Validator refuses a new budget that would compete with an existing one
// for the same pods: a pod is guarded by the one budget its related-pub
// annotation names, so a second budget would count pods it never guards.
type Validator struct {
	// Client lists the namespace's budgets from the API server, not a
	// cache: a budget created a moment before (kubectl apply of a file
	// holding both) must already count.
	Client versioned.Interface
}

// Register serves the validation on s.
func (v *Validator) Register(s *kitwebhook.Server) {
	s.Register(PubPath, PubHandlerName, kitwebhook.HandlerFunc(v.ValidatePub))
}

// ValidatePub is the admission handler. Only CREATE is checked: selector
// and targetRef are immutable (CRD rules), so an update cannot make a new
// overlap, and a budget already stored is never blocked from being edited
// or having its finalizers removed.
func (v *Validator) ValidatePub(ctx context.Context, req kitwebhook.Request) kitwebhook.Response {
	if req.Resource.Group != pubResource.Group || req.Resource.Resource != pubResource.Resource || req.SubResource != "" {
		return kitwebhook.Errored(http.StatusBadRequest, fmt.Errorf("%s validates podunavailablebudgets only, not %s", PubPath, req.Resource.String()))
	}
	if req.Operation != admissionv1.Create {
		return kitwebhook.Allowed()
	}
	p := &policyv1alpha1.PodUnavailableBudget{}
	if err := req.DecodeNamespacedObject(p); err != nil {
		return kitwebhook.Errored(http.StatusBadRequest, err)
	}
	list, err := v.Client.PolicyV1alpha1().PodUnavailableBudgets(p.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, fmt.Errorf("list podunavailablebudgets of namespace %s: %w", p.Namespace, err))
	}
	others := make([]*policyv1alpha1.PodUnavailableBudget, len(list.Items))
	for i := range list.Items {
		others[i] = &list.Items[i]
	}
	if errs := Conflicts(p, others); len(errs) > 0 {
		gk := policyv1alpha1.SchemeGroupVersion.WithKind("PodUnavailableBudget").GroupKind()
		return kitwebhook.Invalid(apierrors.NewInvalid(gk, p.Name, errs).Error())
	}
	return kitwebhook.Allowed()
}

// Conflicts names the first budget of others (oldest first) that would
// protect pods p protects, by OpenKruise's rules: two targetRefs naming the
// same workload (API group, kind and name; the version does not matter), or
// two selectors over the same label keys whose requirements can all hold
// at once. A targetRef and a selector are never compared (which pods a
// workload controls is not known at admission), and neither are selectors
// over different keys. Budgets being deleted do not count.
func Conflicts(p *policyv1alpha1.PodUnavailableBudget, others []*policyv1alpha1.PodUnavailableBudget) field.ErrorList {
	sorted := append([]*policyv1alpha1.PodUnavailableBudget(nil), others...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i].CreationTimestamp, sorted[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return sorted[i].Name < sorted[j].Name
	})
	spec := field.NewPath("spec")
	for _, o := range sorted {
		if o.Name == p.Name || o.DeletionTimestamp != nil {
			continue
		}
		first := o.Namespace + "/" + o.Name
		switch {
		case sameWorkload(p.Spec.TargetReference, o.Spec.TargetReference):
			ref := p.Spec.TargetReference
			return field.ErrorList{field.Invalid(spec.Child("targetRef"), ref.Kind+" "+ref.Name, fmt.Sprintf(
				"PodUnavailableBudget %s already protects the pods of this workload; a pod is guarded by one budget only", first))}
		case selectorsCompete(p.Spec.Selector, o.Spec.Selector):
			return field.ErrorList{field.Invalid(spec.Child("selector"), metav1.FormatLabelSelector(p.Spec.Selector), fmt.Sprintf(
				"PodUnavailableBudget %s selects over the same label keys (%s) and can match the same pods; a pod is guarded by one budget only",
				first, metav1.FormatLabelSelector(o.Spec.Selector)))}
		}
	}
	return nil
}

func sameWorkload(a, b *policyv1alpha1.TargetReference) bool {
	return a != nil && b != nil && apiGroup(a.APIVersion) == apiGroup(b.APIVersion) && a.Kind == b.Kind && a.Name == b.Name
}

// apiGroup is apiVersion's group; a malformed one (the CRD rejects those)
// compares as itself.
func apiGroup(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiVersion
	}
	return gv.Group
}

// selectorsCompete is OpenKruise's "loose" overlap: the same label keys,
// and some label set matching both. Selectors over different keys may
// well match a common pod, but OpenKruise admits them, and so must a
// budget written for it.
func selectorsCompete(a, b *metav1.LabelSelector) bool {
	return a != nil && b != nil && selector.Keys(a).Equal(selector.Keys(b)) && selector.Overlap(a, b)
}
