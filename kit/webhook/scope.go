package webhook

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
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
	// Applied, if set, is called by the leader's loop once the
	// configuration carries this scope (written, or found so): to report
	// on the objects the scope was computed from that they are served
	// (InScopeConditions). An error retries the sync.
	Applied func(ctx context.Context) error
}

// InScopeCondition is the status condition a controller sets on the
// objects its webhook serves (SidecarSet, PodUnavailableBudget): True once
// the webhook's match conditions cover the object at its observedGeneration,
// so that what is created or disrupted from then on is sent to the webhook.
const InScopeCondition = "WebhookInScope"

// Reasons of InScopeCondition.
const (
	ReasonInScope  = "MatchConditionsWritten"
	ReasonNotInUse = "NotServed"
)

// InScopeConditions returns a copy of conds with InScopeCondition set
// (True when in, else False), observedGeneration generation, and whether
// anything changed (the transition time moves only with the status).
func InScopeConditions(conds []metav1.Condition, generation int64, in bool, message string, now time.Time) ([]metav1.Condition, bool) {
	out := slices.Clone(conds)
	c := metav1.Condition{Type: InScopeCondition, Status: metav1.ConditionFalse, Reason: ReasonNotInUse, Message: message,
		ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
	if in {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonInScope
	}
	return out, meta.SetStatusCondition(&out, c)
}

// ReportInScope sets InScopeCondition on each of objs not being deleted
// whose condition differs from what decide says (in, and the message):
// conds reads an object's conditions, write puts the new ones into a copy
// of the cached object and writes its status (carrying the cached
// resourceVersion: a conflict retries the caller's sync on a fresher
// cache). Objects gone meanwhile are skipped; other errors are joined.
func ReportInScope[T metav1.Object](ctx context.Context, objs []T, conds func(T) []metav1.Condition, decide func(T) (bool, string),
	write func(context.Context, T, []metav1.Condition) error, now time.Time) error {
	var errs []error
	for _, o := range objs {
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		in, msg := decide(o)
		c, changed := InScopeConditions(conds(o), o.GetGeneration(), in, msg, now)
		if !changed {
			continue
		}
		if err := write(ctx, o, c); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("set %s of %s/%s: %w", InScopeCondition, o.GetNamespace(), o.GetName(), err))
		}
	}
	return errors.Join(errs...)
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

// WidenScope edits the entry named webhook so that the API server calls it
// at least wherever s says, never less than it does now: each of s's
// conditions the entry carries becomes the disjunction of both (its
// current disjuncts plus s's, s's own expression when that already holds
// every current disjunct); one the entry lacks is added only while the
// entry is never called anyway (some condition "false", e.g. as shipped),
// since a missing condition is "true". Selectors are left alone. What a
// non-leader replica writes: a new object is served as soon as any replica
// has seen it, and only the leader narrows.
func WidenScope(webhook string, s Scope) EditFunc {
	return func(w Webhook) {
		if w.Name != webhook {
			return
		}
		never := slices.ContainsFunc(*w.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool {
			return strings.TrimSpace(c.Expression) == Never
		})
		for _, want := range s.MatchConditions {
			i := slices.IndexFunc(*w.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == want.Name })
			if i < 0 {
				if never {
					*w.MatchConditions = append(*w.MatchConditions, want)
				}
				continue
			}
			if e := Widen((*w.MatchConditions)[i].Expression, want.Expression); e != (*w.MatchConditions)[i].Expression {
				(*w.MatchConditions)[i].Expression = e
			}
		}
	}
}

// MaxWidenedLen bounds a widened expression: beyond it the condition
// becomes "true" (wider, never narrower; the leader narrows it again).
const MaxWidenedLen = 64 << 10

// Widen returns an expression true wherever cur or want is: cur when it
// already holds every disjunct of want, want when want holds every
// disjunct of cur (the leader's canonical form), else the disjunction of
// both's disjuncts.
func Widen(cur, want string) string {
	c, w := strings.TrimSpace(cur), strings.TrimSpace(want)
	switch {
	case c == Always || w == Never:
		return cur
	case c == Never || w == Always:
		return want
	}
	cd, wd := Disjuncts(c), Disjuncts(w)
	switch {
	case subset(wd, cd):
		return cur
	case subset(cd, wd):
		return want
	}
	out := AnyOf(append(cd, wd...)...)
	if len(out) > MaxWidenedLen {
		return Always
	}
	return out
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// Disjuncts splits a CEL expression at its top-level "||" (outside
// parentheses, brackets, braces and string literals), each part without
// enclosing parentheses: the terms AnyOf joined. An expression with a
// top-level conditional (?:), which binds looser than ||, is one term.
func Disjuncts(expr string) []string {
	var parts []string
	start, conditional := 0, false
	scanCEL(expr, func(i, depth int) bool {
		if depth != 0 || i < start { // i < start: the second '|' of a split
			return true
		}
		switch {
		case expr[i] == '?':
			conditional = true
			return false
		case expr[i] == '|' && i+1 < len(expr) && expr[i+1] == '|':
			parts = append(parts, unparen(expr[start:i]))
			start = i + 2
		}
		return true
	})
	if conditional {
		return []string{unparen(expr)}
	}
	return append(parts, unparen(expr[start:]))
}

// unparen trims s and drops parentheses enclosing all of it.
func unparen(s string) string {
	for {
		s = strings.TrimSpace(s)
		if len(s) < 2 || s[0] != '(' || s[len(s)-1] != ')' || matching(s) != len(s)-1 {
			return s
		}
		s = s[1 : len(s)-1]
	}
}

// matching returns the index of the parenthesis closing s[0], or -1.
func matching(s string) int {
	return scanCEL(s, func(i, depth int) bool { return s[i] != ')' || depth != 0 })
}

// scanCEL walks the bytes of a CEL expression outside its string literals,
// calling visit with each index and the bracket depth there (an opening
// bracket is at the depth outside it, a closing one at the depth after
// it). It stops at the first index visit returns false for and returns it;
// -1 when visit never does.
func scanCEL(s string, visit func(i, depth int) bool) int {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if quote != 0 {
			switch ch {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch ch {
		case '"', '\'':
			quote = ch
			continue
		case ')', ']', '}':
			depth--
		}
		if !visit(i, depth) {
			return i
		}
		if ch == '(' || ch == '[' || ch == '{' {
			depth++
		}
	}
	return -1
}

// ScopeSyncer keeps one webhook entry's scope equal to Compute(), in two
// loops: Run (register it as the leader's controller: the one writer that
// narrows, ApplyScope) and ReplicaComponent (every replica, leader or not:
// WidenScope only), so that a new object is in scope as soon as any replica
// has seen it — with no leader too — while only the leader removes what no
// object needs any more. Both sync on every Trigger (the controller's
// event handlers call it when the objects that decide the scope change;
// WatchConfig calls it when the configuration changes, e.g. a re-apply of
// the manifests reset it), at start and every Resync.
type ScopeSyncer struct {
	Configs Configurations
	Ref     ConfigRef
	Webhook string
	Compute func() (Scope, error)
	Resync  time.Duration
	trigger Trigger
	widen   Trigger
}

// NewScopeSyncer syncs the entry webhook of ref to compute().
func NewScopeSyncer(client kubernetes.Interface, ref ConfigRef, webhook string, compute func() (Scope, error)) *ScopeSyncer {
	return &ScopeSyncer{Configs: Configurations{Client: client}, Ref: ref, Webhook: webhook, Compute: compute,
		Resync: 30 * time.Second, trigger: NewTrigger(), widen: NewTrigger()}
}

// Trigger asks both loops for a sync (never blocks; bursts coalesce).
func (s *ScopeSyncer) Trigger() {
	s.trigger.Fire()
	s.widen.Fire()
}

// Sync computes the scope and writes it if the configuration differs (the
// leader).
func (s *ScopeSyncer) Sync(ctx context.Context) error { return s.sync(ctx, false) }

// Widen computes the scope and adds it to the configuration's if that
// does not cover it (every replica).
func (s *ScopeSyncer) Widen(ctx context.Context) error { return s.sync(ctx, true) }

func (s *ScopeSyncer) sync(ctx context.Context, widen bool) error {
	scope, err := s.Compute()
	if err != nil {
		return fmt.Errorf("compute scope of webhook %s: %w", s.Webhook, err)
	}
	edit := ApplyScope(s.Webhook, scope)
	if widen {
		edit = WidenScope(s.Webhook, scope)
	}
	wrote, err := s.Configs.Edit(ctx, s.Ref, edit)
	if err != nil {
		return err
	}
	if wrote {
		klog.FromContext(ctx).Info("Updated the webhook's scope", "configuration", s.Ref.String(), "webhook", s.Webhook,
			"widenOnly", widen, "matchConditions", scope.MatchConditions)
	}
	if !widen && scope.Applied != nil {
		if err := scope.Applied(ctx); err != nil {
			return fmt.Errorf("report scope of webhook %s: %w", s.Webhook, err)
		}
	}
	return nil
}

// Run syncs until ctx is done. Name and signature fit kit/app's Controller.
func (s *ScopeSyncer) Run(ctx context.Context, _ int) error {
	runLoop(ctx, s.trigger, s.Resync, "scope of "+s.Webhook, s.Sync)
	return nil
}

// RunWiden widens until ctx is done (every replica).
func (s *ScopeSyncer) RunWiden(ctx context.Context) error {
	runLoop(ctx, s.widen, s.Resync, "widened scope of "+s.Webhook, s.Widen)
	return nil
}

// Name is the controller name for kit/app.
func (s *ScopeSyncer) Name() string { return "webhook-scope-" + s.Webhook }

// ReplicaComponent runs RunWiden on every replica (kit/app); it does not
// gate readiness.
func (s *ScopeSyncer) ReplicaComponent() kitapp.ReplicaComponent {
	return kitapp.ReplicaComponent{Name: "webhook-scope-widen-" + s.Webhook, Run: s.RunWiden}
}

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

// TriggerOnSpecChange is the event handler of the objects a scope is
// computed from: trigger on every add and delete, and on an update that
// changes the generation (spec) or starts the deletion; status writes do not
// move a scope.
func TriggerOnSpecChange(trigger func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { trigger() },
		UpdateFunc: func(o, n any) {
			oo, ok1 := o.(metav1.Object)
			no, ok2 := n.(metav1.Object)
			if !ok1 || !ok2 || oo.GetGeneration() != no.GetGeneration() || (oo.GetDeletionTimestamp() == nil) != (no.GetDeletionTimestamp() == nil) {
				trigger()
			}
		},
		DeleteFunc: func(any) { trigger() },
	}
}
