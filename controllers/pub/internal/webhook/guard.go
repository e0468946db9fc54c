// Package webhook is the PodUnavailableBudget guard, served by kit/webhook
// on every replica: a validating webhook on pod DELETE, pod UPDATE, the
// pods/status UPDATE that starts an in-place update (InPlaceUpdateReady
// turning False) and pods/eviction CREATE that takes one unavailability from the pod's
// budget — an optimistic write of the PUB's status carrying the
// resourceVersion it read, so that concurrent requests (on any replica)
// can never take the same unit twice — or denies the request naming the
// budget and its numbers. The leader keeps the webhook configuration's
// match conditions (scope.go), so the API server calls it only for pods
// marked with the related-pub annotation, in namespaces that have a budget.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	policylisters "github.com/flotilla-dev/flotilla/client/listers/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/pubcontrol"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/workload"
	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Path, configuration and entry names, as in deploy/components/pub.
const (
	PodPath    = "/validate-pod"
	ConfigName = "flotilla-pub"
	// PodWebhookName guards pod DELETE and UPDATE; EvictionWebhookName
	// guards pods/eviction CREATE. The API server names them in its errors.
	PodWebhookName      = "pods.pub.flotilla.dev"
	EvictionWebhookName = "evictions.pub.flotilla.dev"
	// HandlerName labels the webhook metrics.
	HandlerName = "pub-validate-pod"
)

// maxAttempts bounds the optimistic writes of one request.
const maxAttempts = 5

// Refs are the binary's own webhook configurations.
func Refs() []kitwebhook.ConfigRef {
	return []kitwebhook.ConfigRef{{Kind: kitwebhook.Validating, Name: ConfigName}}
}

// Guard decides pod operations against their budgets.
type Guard struct {
	Pubs   policylisters.PodUnavailableBudgetLister
	Client versioned.Interface
	// Kube reads the live pod: of an eviction (the request carries only
	// its name), and of a delete or update before budget is taken for it.
	Kube     kubernetes.Interface
	Gates    featuregate.FeatureGate
	Clock    clock.PassiveClock
	Recorder record.EventRecorder
	// Finder resolves a targetRef's workload when a pod's related-pub
	// annotation names no budget that protects it (cover.go); without one,
	// only the pod's direct controller is compared.
	Finder workload.Finder

	mu sync.Mutex
	// batchers queue the requests of one process per budget and commit
	// them together: they would otherwise conflict on the status write.
	batchers map[types.UID]*batcher
	// last is the status this process wrote last per budget: newer than
	// the informer's copy until the watch catches up.
	last map[types.UID]*policyv1alpha1.PodUnavailableBudget
}

// Register serves the guard on s.
func (g *Guard) Register(s *kitwebhook.Server) {
	s.Register(PodPath, HandlerName, kitwebhook.HandlerFunc(g.ValidatePod))
}

// ValidatePod is the admission handler.
func (g *Guard) ValidatePod(ctx context.Context, req kitwebhook.Request) kitwebhook.Response {
	pod, op, dryRun, resp, done := g.decode(ctx, req)
	if done {
		return resp
	}
	if pod, resp, done = g.live(ctx, req, pod, op); done {
		return resp
	}
	p, err := g.budgetOf(ctx, pod)
	if err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, err)
	}
	if p == nil {
		return kitwebhook.Allowed()
	}
	name := p.Name
	if why := pubcontrol.Exempt(pod, p, op, g.gates().Enabled(features.InPlacePodVerticalScaling)); why != pubcontrol.NotExempt {
		klog.FromContext(ctx).V(4).Info("Pod operation needs no budget", "pod", klog.KObj(pod), "operation", op, "pub", name, "reason", string(why))
		return kitwebhook.Allowed()
	}
	err = g.take(ctx, p, pod.Name, op, dryRun)
	var denied *pubcontrol.DeniedError
	switch {
	case errors.As(err, &denied):
		if g.Recorder != nil && !dryRun {
			g.Recorder.Eventf(pod, corev1.EventTypeWarning, "PubPreventPodDeletion", "%s", denied.Error())
		}
		r := kitwebhook.Denied("%s", denied.Error())
		if op == policyv1alpha1.PubEvictOperation {
			// As the Eviction API answers for a PodDisruptionBudget, so that
			// kubectl drain waits and retries instead of giving up.
			r.Result.Code, r.Result.Reason = http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests
		}
		return r
	case err != nil:
		return kitwebhook.Errored(http.StatusInternalServerError, err)
	}
	return kitwebhook.Allowed()
}

// decode returns the pod the request would make unavailable, the
// operation and whether it is a dry run, or the response when there is
// nothing to guard.
func (g *Guard) decode(ctx context.Context, req kitwebhook.Request) (*corev1.Pod, policyv1alpha1.PubOperation, bool, kitwebhook.Response, bool) {
	gates := g.gates()
	switch {
	case req.Operation == admissionv1.Delete && req.SubResource == "":
		if !gates.Enabled(features.PodUnavailableBudgetDeleteGate) {
			break
		}
		pod := &corev1.Pod{}
		if err := req.DecodeOldObject(pod); err != nil {
			return nil, "", false, kitwebhook.Errored(http.StatusBadRequest, err), true
		}
		return pod, policyv1alpha1.PubDeleteOperation, req.IsDryRun(), kitwebhook.Response{}, false
	case req.Operation == admissionv1.Create && req.SubResource == "eviction":
		if !gates.Enabled(features.PodUnavailableBudgetDeleteGate) {
			break
		}
		// The eviction's own deleteOptions carry its dry run, not the
		// request's options.
		var ev policyv1.Eviction
		if err := req.DecodeObject(&ev); err != nil {
			return nil, "", false, kitwebhook.Errored(http.StatusBadRequest, err), true
		}
		dryRun := req.IsDryRun() || (ev.DeleteOptions != nil && len(ev.DeleteOptions.DryRun) > 0)
		pod, err := g.Kube.CoreV1().Pods(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break // the eviction itself will say so
		}
		if err != nil {
			return nil, "", false, kitwebhook.Errored(http.StatusInternalServerError, fmt.Errorf("get pod %s/%s: %w", req.Namespace, req.Name, err)), true
		}
		return pod, policyv1alpha1.PubEvictOperation, dryRun, kitwebhook.Response{}, false
	case req.Operation == admissionv1.Update && req.SubResource == "status":
		if !gates.Enabled(features.PodUnavailableBudgetUpdateGate) {
			break
		}
		oldPod, newPod, err := decodeUpdate(req)
		if err != nil {
			return nil, "", false, kitwebhook.Errored(http.StatusBadRequest, err), true
		}
		if !pubcontrol.InPlaceUpdateStart(oldPod, newPod) {
			break
		}
		return oldPod, policyv1alpha1.PubUpdateOperation, req.IsDryRun(), kitwebhook.Response{}, false
	case req.Operation == admissionv1.Update && (req.SubResource == "" || req.SubResource == "resize"):
		// pods/resize carries the whole pod, like an update of the pod: the
		// same classification (RESIZE when restart-free, else UPDATE).
		if !gates.Enabled(features.PodUnavailableBudgetUpdateGate) {
			break
		}
		oldPod, newPod, err := decodeUpdate(req)
		if err != nil {
			return nil, "", false, kitwebhook.Errored(http.StatusBadRequest, err), true
		}
		op, ok := pubcontrol.UpdateOperation(oldPod, newPod)
		if !ok {
			break
		}
		return oldPod, op, req.IsDryRun(), kitwebhook.Response{}, false
	}
	return nil, "", false, kitwebhook.Allowed(), true
}

// live returns the pod as the API server has it now (a GET, not a cache)
// in place of the review's old object, or the answer when there is none
// to guard. The review says which pod; only the live pod says that it
// exists, that it is this pod (uid) and which budget covers it and whether
// it is available: a review carrying an old object that does not match —
// forged by a caller that reached the server, or racing a re-creation —
// takes nothing from any budget. An eviction's pod was read live already.
func (g *Guard) live(ctx context.Context, req kitwebhook.Request, pod *corev1.Pod, op policyv1alpha1.PubOperation) (*corev1.Pod, kitwebhook.Response, bool) {
	if op == policyv1alpha1.PubEvictOperation {
		return pod, kitwebhook.Response{}, false
	}
	ns := pod.Namespace
	if ns == "" {
		ns = req.Namespace
	}
	cur, err := g.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		klog.FromContext(ctx).V(2).Info("Pod of the review does not exist: nothing to guard", "pod", klog.KRef(ns, pod.Name))
		return nil, kitwebhook.Allowed(), true
	case err != nil:
		return nil, kitwebhook.Errored(http.StatusInternalServerError, fmt.Errorf("get pod %s/%s: %w", ns, pod.Name, err)), true
	case pod.UID != "" && cur.UID != pod.UID:
		klog.FromContext(ctx).V(2).Info("Review names another pod than the live one: nothing to guard", "pod", klog.KObj(cur),
			"reviewUID", pod.UID, "liveUID", cur.UID)
		return nil, kitwebhook.Allowed(), true
	}
	return cur, kitwebhook.Response{}, false
}

// decodeUpdate decodes the old and the new pod of an update request.
func decodeUpdate(req kitwebhook.Request) (oldPod, newPod *corev1.Pod, err error) {
	oldPod, newPod = &corev1.Pod{}, &corev1.Pod{}
	if err := req.DecodeOldObject(oldPod); err != nil {
		return nil, nil, err
	}
	if err := req.DecodeObject(newPod); err != nil {
		return nil, nil, err
	}
	return oldPod, newPod, nil
}

// take records pod in the budget's status and decrements
// unavailableAllowed with a write conditional on the resourceVersion it
// read; on a conflict it reads the budget from the API server and decides
// again. Requests for one budget arriving while a write is in flight are
// decided together and committed in the next single write (a group
// commit): the decisions are the same as one by one, in arrival order, and
// a burst costs a few writes instead of one each. A dry run decides
// without writing.
func (g *Guard) take(ctx context.Context, cached *policyv1alpha1.PodUnavailableBudget, pod string, op policyv1alpha1.PubOperation, dryRun bool) error {
	if dryRun {
		status := g.newest(cached).Status.DeepCopy()
		if isRecorded(status, pod) {
			return nil
		}
		return pubcontrol.CheckAndDecrement(cached.Name, status, pod, op, g.now())
	}
	b := g.batcher(cached.UID)
	req := &pending{pod: pod, op: op, done: make(chan error, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, req)
	lead := !b.running
	b.running = true
	b.mu.Unlock()
	if lead {
		// The commit serves other requests too: it must not end with this
		// request's context.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
		go func() { defer cancel(); g.drain(cctx, b, cached) }()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// commitTimeout bounds the rounds of one drain (the API server gives up on
// the webhook after its timeoutSeconds anyway).
const commitTimeout = 10 * time.Second

type pending struct {
	pod  string
	op   policyv1alpha1.PubOperation
	done chan error
}

type batcher struct {
	mu      sync.Mutex
	queue   []*pending
	running bool
}

func (g *Guard) batcher(uid types.UID) *batcher {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.batchers == nil {
		g.batchers = map[types.UID]*batcher{}
	}
	b, ok := g.batchers[uid]
	if !ok {
		b = &batcher{}
		g.batchers[uid] = b
	}
	return b
}

// drain commits the queued requests, round after round, until none is left.
func (g *Guard) drain(ctx context.Context, b *batcher, cached *policyv1alpha1.PodUnavailableBudget) {
	for {
		b.mu.Lock()
		batch := b.queue
		b.queue = nil
		if len(batch) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		results := g.commit(ctx, cached, batch)
		for i, p := range batch {
			p.done <- results[i]
		}
	}
}

// commit decides batch in order on the newest budget and writes the
// result once, conditional on its resourceVersion; on a conflict the
// budget is read back and the whole batch decided again.
func (g *Guard) commit(ctx context.Context, cached *policyv1alpha1.PodUnavailableBudget, batch []*pending) []error {
	all := func(err error) []error {
		out := make([]error, len(batch))
		for i := range out {
			out[i] = err
		}
		return out
	}
	cur := g.newest(cached)
	for range maxAttempts {
		status := cur.Status.DeepCopy()
		results := make([]error, len(batch))
		changed := false
		for i, p := range batch {
			if isRecorded(status, p.pod) {
				continue
			}
			if results[i] = pubcontrol.CheckAndDecrement(cur.Name, status, p.pod, p.op, g.now()); results[i] == nil {
				changed = true
			}
		}
		if !changed {
			return results
		}
		upd := cur.DeepCopy()
		upd.Status = *status
		out, err := g.Client.PolicyV1alpha1().PodUnavailableBudgets(upd.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		switch {
		case err == nil:
			g.remember(out)
			klog.FromContext(ctx).V(2).Info("Took from the budget", "pub", klog.KObj(out), "requests", len(batch),
				"unavailableAllowed", out.Status.UnavailableAllowed)
			return results
		case apierrors.IsNotFound(err):
			return all(nil)
		case !apierrors.IsConflict(err):
			return all(fmt.Errorf("update status of pub %s/%s: %w", cur.Namespace, cur.Name, err))
		}
		cur, err = g.Client.PolicyV1alpha1().PodUnavailableBudgets(cached.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return all(nil)
		}
		if err != nil {
			return all(fmt.Errorf("get pub %s/%s: %w", cached.Namespace, cached.Name, err))
		}
	}
	return all(fmt.Errorf("pub %s/%s: status still conflicting after %d attempts", cached.Namespace, cached.Name, maxAttempts))
}

func isRecorded(s *policyv1alpha1.PodUnavailableBudgetStatus, pod string) bool {
	_, d := s.DisruptedPods[pod]
	_, u := s.UnavailablePods[pod]
	return d || u
}

// newest is the informer's copy or the one this process wrote last,
// whichever has the higher resourceVersion (a stale pick only costs a
// conflict and a re-read).
func (g *Guard) newest(cached *policyv1alpha1.PodUnavailableBudget) *policyv1alpha1.PodUnavailableBudget {
	g.mu.Lock()
	defer g.mu.Unlock()
	mine, ok := g.last[cached.UID]
	if !ok {
		return cached
	}
	a, err1 := strconv.ParseUint(mine.ResourceVersion, 10, 64)
	b, err2 := strconv.ParseUint(cached.ResourceVersion, 10, 64)
	if err1 != nil || err2 != nil || b >= a {
		delete(g.last, cached.UID)
		return cached
	}
	return mine
}

func (g *Guard) remember(p *policyv1alpha1.PodUnavailableBudget) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		g.last = map[types.UID]*policyv1alpha1.PodUnavailableBudget{}
	}
	g.last[p.UID] = p
}

func (g *Guard) gates() featuregate.FeatureGate {
	if g.Gates == nil {
		return features.MustNewGate(features.PodUnavailableBudgetDeleteGate, features.PodUnavailableBudgetUpdateGate, features.InPlacePodVerticalScaling)
	}
	return g.Gates
}

func (g *Guard) now() time.Time {
	if g.Clock == nil {
		return time.Now()
	}
	return g.Clock.Now()
}
