package webhook

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Scope is what a controller computes, from the objects that exist, for one
// webhook entry: when the API server should call it.
type Scope struct {
	// MatchConditions the entry must carry. Conditions whose names start
	// with OwnedPrefix belong to the controller: those not listed here are
	// removed. Others (from the manifests) are kept.
	MatchConditions []admissionregistrationv1.MatchCondition
	// NamespaceSelector and ObjectSelector replace the entry's when non-nil.
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
}

// OwnedPrefix marks the match conditions a ScopeSyncer owns.
const OwnedPrefix = "flotilla-"

// ApplyScope edits the entry named webhook to s.
func ApplyScope(webhook string, s Scope) EditFunc {
	return func(w Webhook) {
		if w.Name != webhook {
			return
		}
		want := make([]admissionregistrationv1.MatchCondition, 0, len(*w.MatchConditions)+len(s.MatchConditions))
		for _, c := range *w.MatchConditions {
			if !strings.HasPrefix(c.Name, OwnedPrefix) && !slices.ContainsFunc(s.MatchConditions, func(o admissionregistrationv1.MatchCondition) bool { return o.Name == c.Name }) {
				want = append(want, c)
			}
		}
		want = append(want, s.MatchConditions...)
		if !reflect.DeepEqual(*w.MatchConditions, want) {
			*w.MatchConditions = want
		}
		if s.NamespaceSelector != nil && !equality.Semantic.DeepEqual(*w.NamespaceSelector, s.NamespaceSelector) {
			*w.NamespaceSelector = s.NamespaceSelector.DeepCopy()
		}
		if s.ObjectSelector != nil && !equality.Semantic.DeepEqual(*w.ObjectSelector, s.ObjectSelector) {
			*w.ObjectSelector = s.ObjectSelector.DeepCopy()
		}
	}
}

// ScopeSyncer keeps one webhook entry's scope equal to Compute(): on every
// Trigger (the controller's event handlers call it when the objects that
// decide the scope change), at start and every Resync (repairing a
// configuration re-applied from the manifests). Run it on the leader only:
// one writer, computing from the leader's caches.
type ScopeSyncer struct {
	Configs Configurations
	Ref     ConfigRef
	Webhook string
	Compute func() (Scope, error)
	Resync  time.Duration
	trigger Trigger
}

// NewScopeSyncer syncs the entry webhook of ref to compute().
func NewScopeSyncer(client kubernetes.Interface, ref ConfigRef, webhook string, compute func() (Scope, error)) *ScopeSyncer {
	return &ScopeSyncer{Configs: Configurations{Client: client}, Ref: ref, Webhook: webhook, Compute: compute,
		Resync: 30 * time.Second, trigger: NewTrigger()}
}

// Trigger asks for a sync (never blocks; bursts coalesce).
func (s *ScopeSyncer) Trigger() { s.trigger.Fire() }

// Sync computes the scope and writes it if the configuration differs.
func (s *ScopeSyncer) Sync(ctx context.Context) error {
	scope, err := s.Compute()
	if err != nil {
		return fmt.Errorf("compute scope of webhook %s: %w", s.Webhook, err)
	}
	wrote, err := s.Configs.Edit(ctx, s.Ref, ApplyScope(s.Webhook, scope))
	if err != nil {
		return err
	}
	if wrote {
		klog.FromContext(ctx).Info("Updated the webhook's scope", "configuration", s.Ref.String(), "webhook", s.Webhook,
			"matchConditions", scope.MatchConditions)
	}
	return nil
}

// Run syncs until ctx is done. Name and signature fit kit/app's Controller.
func (s *ScopeSyncer) Run(ctx context.Context, _ int) error {
	runLoop(ctx, s.trigger, s.Resync, "scope of "+s.Webhook, s.Sync)
	return nil
}

// Name is the controller name for kit/app.
func (s *ScopeSyncer) Name() string { return "webhook-scope-" + s.Webhook }

// CEL expressions for match conditions. The API server evaluates them with
// variables object, oldObject (null on CREATE / DELETE respectively) and
// request; an expression that errors counts as a failed call (with
// failurePolicy Fail: the request is rejected), so every one here guards
// optional fields with has().

// Never is the expression of an empty scope: the API server never calls.
const Never = "false"

// Always matches every request the rules select.
const Always = "true"

// LabelsMatch returns the expression true when the labels of obj ("object"
// or "oldObject") match sel; a nil selector matches nothing, an empty one
// everything (metav1.LabelSelectorAsSelector's semantics).
func LabelsMatch(obj string, sel *metav1.LabelSelector) (string, error) {
	if sel == nil {
		return Never, nil
	}
	labels := obj + ".metadata.labels"
	has := func(k string) string { return "(has(" + labels + ") && " + quote(k) + " in " + labels + ")" }
	val := func(k string) string { return labels + "[" + quote(k) + "]" }
	var terms []string
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		terms = append(terms, "("+has(k)+" && "+val(k)+" == "+quote(sel.MatchLabels[k])+")")
	}
	for _, r := range sel.MatchExpressions {
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			terms = append(terms, "("+has(r.Key)+" && "+val(r.Key)+" in "+quoteList(r.Values)+")")
		case metav1.LabelSelectorOpNotIn:
			terms = append(terms, "!("+has(r.Key)+" && "+val(r.Key)+" in "+quoteList(r.Values)+")")
		case metav1.LabelSelectorOpExists:
			terms = append(terms, has(r.Key))
		case metav1.LabelSelectorOpDoesNotExist:
			terms = append(terms, "!"+has(r.Key))
		default:
			return "", fmt.Errorf("label selector operator %q", r.Operator)
		}
	}
	if len(terms) == 0 {
		return Always, nil
	}
	return strings.Join(terms, " && "), nil
}

// HasAnnotation returns the expression true when obj ("object" or
// "oldObject") carries annotation key: how PodUnavailableBudget scopes its
// DELETE webhook to pods it marked (kruise.io/related-pub), oldObject being
// the pod on DELETE.
func HasAnnotation(obj, key string) string {
	a := obj + ".metadata.annotations"
	return "has(" + a + ") && " + quote(key) + " in " + a
}

// NamespaceIn returns the expression true when the request's namespace is
// one of names.
func NamespaceIn(names ...string) string {
	switch len(names) {
	case 0:
		return Never
	case 1:
		return "request.namespace == " + quote(names[0])
	}
	return "request.namespace in " + quoteList(names)
}

// AllOf joins expressions with &&.
func AllOf(exprs ...string) string {
	var out []string
	for _, e := range exprs {
		switch e {
		case Always:
			continue
		case Never:
			return Never
		}
		out = append(out, "("+e+")")
	}
	if len(out) == 0 {
		return Always
	}
	return strings.Join(out, " && ")
}

// AnyOf joins expressions with || (duplicates dropped, sorted for a stable
// configuration).
func AnyOf(exprs ...string) string {
	set := map[string]bool{}
	for _, e := range exprs {
		switch e {
		case Never:
			continue
		case Always:
			return Always
		}
		set["("+e+")"] = true
	}
	if len(set) == 0 {
		return Never
	}
	out := make([]string, 0, len(set))
	for e := range set {
		out = append(out, e)
	}
	sort.Strings(out)
	return strings.Join(out, " || ")
}

// quote writes s as a CEL string literal: Go's double-quoted escapes are a
// subset of CEL's.
func quote(s string) string { return strconv.Quote(s) }

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
