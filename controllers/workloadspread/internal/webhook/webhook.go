// Package webhook holds WorkloadSpread's admission handlers, served by
// kit/webhook on every replica: the subset of a pod at creation
// (/mutate-pod), the deletingPods record of a pod deletion or eviction
// (/validate-pod-deletion) and the WorkloadSpread rules that need other
// objects (/validate-workloadspread). The leader keeps the pod entries'
// match conditions to the WorkloadSpreads that exist (PodScopes), so the
// API server calls it only for pods some WorkloadSpread can concern.
package webhook

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/workload"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Paths and names of the webhooks, as in deploy/components/workloadspread.
const (
	PodPath            = "/mutate-pod"
	PodDeletionPath    = "/validate-pod-deletion"
	WorkloadSpreadPath = "/validate-workloadspread"
	// ConfigName names both the Mutating- and the
	// ValidatingWebhookConfiguration.
	ConfigName = "flotilla-workloadspread"
	// PodWebhookName is the pod creation entry (mutating).
	PodWebhookName = "subset.pods.workloadspread.flotilla.dev"
	// DeletionWebhookName and EvictionWebhookName are the validating
	// entries recording deletions and evictions.
	DeletionWebhookName = "deletion.pods.workloadspread.flotilla.dev"
	EvictionWebhookName = "eviction.pods.workloadspread.flotilla.dev"
	// Handler names (metrics label webhook=...).
	PodHandler            = "workloadspread-mutate-pod"
	PodDeletionHandler    = "workloadspread-pod-deletion"
	WorkloadSpreadHandler = "workloadspread-validate"
)

// Refs are the binary's own webhook configurations.
func Refs() []kitwebhook.ConfigRef {
	return []kitwebhook.ConfigRef{{Kind: kitwebhook.Mutating, Name: ConfigName}, {Kind: kitwebhook.Validating, Name: ConfigName}}
}

// Handlers are the WorkloadSpread admission handlers.
type Handlers struct {
	// Spreads is the replica's WorkloadSpread cache.
	Spreads appslisters.WorkloadSpreadLister
	Client  versioned.Interface
	Kube    kubernetes.Interface
	// Targets reads a workload for its replicas (when the status has no
	// subsets yet and a maxReplicas is a percent).
	Targets workload.Getter
	Clock   clock.PassiveClock
	// NewUID names a pod admitted without a name (default: a random UUID).
	NewUID func() string

	mu      sync.Mutex
	locks   map[types.UID]*sync.Mutex
	written map[types.UID]*appsv1alpha1.WorkloadSpread
}

// Register serves the three handlers on s.
func (h *Handlers) Register(s *kitwebhook.Server) {
	s.Register(PodPath, PodHandler, kitwebhook.HandlerFunc(h.MutatePod))
	s.Register(PodDeletionPath, PodDeletionHandler, kitwebhook.HandlerFunc(h.PodDeletion))
	s.Register(WorkloadSpreadPath, WorkloadSpreadHandler, kitwebhook.HandlerFunc(h.ValidateWorkloadSpread))
}

// MutatePod places a pod being created in the subset of the
// WorkloadSpread of its workload: the status records it first (creatingPods,
// missingReplicas, under optimistic concurrency), then the pod gets the
// subset's affinity, tolerations, patch and annotation. A pod of no
// WorkloadSpread, or one whose subsets are all full, is admitted unchanged.
func (h *Handlers) MutatePod(ctx context.Context, req kitwebhook.Request) kitwebhook.Response {
	pod, resp, ok := kitwebhook.PodCreation(req)
	if !ok {
		return resp
	}
	ws, err := h.spreadOf(ctx, pod)
	if err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, err)
	}
	if ws == nil || !podutil.IsActive(pod) {
		return kitwebhook.Allowed()
	}
	var adm spread.Admission
	if ws.Spec.TargetReference.Kind == "StatefulSet" {
		adm.Subset = spread.OrdinalSubset(ws, pod.Name)
	} else if len(ws.Spec.Subsets) == 1 && ws.Spec.Subsets[0].MaxReplicas == nil {
		adm.Subset = ws.Spec.Subsets[0].Name
	} else if adm, err = h.record(ctx, ws, spread.Create, pod.Name, "", req.IsDryRun()); err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, err)
	}
	if adm.Subset == "" {
		klog.FromContext(ctx).V(2).Info("No subset has room: pod admitted unchanged", "workloadSpread", klog.KObj(ws), "pod", pod.Name+pod.GenerateName)
		return kitwebhook.Allowed()
	}
	if err := spread.Inject(pod, ws, adm.Subset, adm.UID); err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, err)
	}
	return kitwebhook.Patched(req.Object.Raw, pod)
}

// PodDeletion records the deletion or eviction of a placed pod in its
// subset's deletingPods (its place is free for a replacement at once).
// It never refuses: an error answers non-2xx, the failurePolicy decides.
func (h *Handlers) PodDeletion(ctx context.Context, req kitwebhook.Request) kitwebhook.Response {
	var pod *corev1.Pod
	op := spread.Delete
	switch {
	case req.Operation == admissionv1.Delete && req.SubResource == "":
		pod = &corev1.Pod{}
		if err := req.DecodeOldObject(pod); err != nil {
			return kitwebhook.Errored(http.StatusBadRequest, err)
		}
	case req.Operation == admissionv1.Create && req.SubResource == "eviction":
		op = spread.Eviction
		p, err := h.Kube.CoreV1().Pods(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return kitwebhook.Allowed()
		}
		if err != nil {
			return kitwebhook.Errored(http.StatusInternalServerError, fmt.Errorf("get evicted pod %s/%s: %w", req.Namespace, req.Name, err))
		}
		pod = p
	default:
		return kitwebhook.Allowed()
	}
	in := spread.InjectedOf(pod)
	if in == nil || !podutil.IsActive(pod) || metav1.GetControllerOfNoCopy(pod) == nil {
		return kitwebhook.Allowed()
	}
	ws, err := h.Spreads.WorkloadSpreads(pod.Namespace).Get(in.Name)
	if apierrors.IsNotFound(err) {
		return kitwebhook.Allowed()
	}
	if err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, err)
	}
	if _, err := h.record(ctx, ws, op, pod.Name, in.Subset, req.IsDryRun()); err != nil {
		return kitwebhook.Errored(http.StatusInternalServerError, err)
	}
	return kitwebhook.Allowed()
}

// spreadOf returns the WorkloadSpread whose target controls pod (directly,
// or through the ReplicaSet of a Deployment), nil if none.
func (h *Handlers) spreadOf(ctx context.Context, pod *corev1.Pod) (*appsv1alpha1.WorkloadSpread, error) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return nil, nil
	}
	all, err := h.Spreads.WorkloadSpreads(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list workloadspreads: %w", err)
	}
	for _, ws := range all {
		if !spread.Served(ws) {
			continue
		}
		t := ws.Spec.TargetReference
		if spread.RefersTo(t, ref) {
			return ws, nil
		}
		if !spread.MaybeViaReplicaSet(t, ref) {
			continue
		}
		rs, err := h.Kube.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get replicaset %s of pod: %w", ref.Name, err)
		}
		if spread.RefersTo(t, metav1.GetControllerOfNoCopy(rs)) {
			return ws, nil
		}
	}
	return nil, nil
}

// admitBackoff: conflicts come from other replicas and from the
// reconciler; requests of this replica take turns on the lock.
var admitBackoff = wait.Backoff{Steps: 20, Duration: 5 * time.Millisecond, Factor: 1.5, Jitter: 0.5, Cap: 200 * time.Millisecond}

// record applies op to ws's status and writes it, retrying on conflict
// from a fresh read: the status is the one place that says how many pods
// each subset holds, so two creates never both take a subset's last place.
// Requests for the same WorkloadSpread take turns on this replica, each
// starting from the newest status this replica wrote or cached.
func (h *Handlers) record(ctx context.Context, ws *appsv1alpha1.WorkloadSpread, op spread.Operation, podName, subset string, dryRun bool) (spread.Admission, error) {
	unlock := h.lock(ws.UID)
	defer unlock()
	var adm spread.Admission
	refresh := false
	err := retry.OnError(admitBackoff, apierrors.IsConflict, func() error {
		cur, err := h.latest(ctx, ws, refresh)
		if err != nil || cur == nil {
			return err
		}
		statuses := cur.DeepCopy().Status.SubsetStatuses
		if len(statuses) == 0 {
			if statuses, err = h.initial(ctx, cur); err != nil {
				return err
			}
		}
		adm = spread.Admit(statuses, op, podName, subset, h.now(), h.uid)
		if !adm.Changed || dryRun {
			return nil
		}
		next := cur.DeepCopy()
		next.Status.SubsetStatuses = statuses
		out, err := h.Client.AppsV1alpha1().WorkloadSpreads(ws.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			refresh = true
			return err
		}
		h.remember(out)
		return nil
	})
	if err != nil {
		return spread.Admission{}, fmt.Errorf("record %s of pod %s in workloadspread %s/%s: %w", op, podName, ws.Namespace, ws.Name, err)
	}
	return adm, nil
}

// latest is the newest WorkloadSpread this replica knows: the cache's or
// the one it last wrote, whichever has the higher resourceVersion; after a
// conflict, the API server's. nil when it is gone.
func (h *Handlers) latest(ctx context.Context, ws *appsv1alpha1.WorkloadSpread, refresh bool) (*appsv1alpha1.WorkloadSpread, error) {
	if refresh {
		cur, err := h.Client.AppsV1alpha1().WorkloadSpreads(ws.Namespace).Get(ctx, ws.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("get workloadspread: %w", err)
		}
		h.remember(cur)
		return cur, nil
	}
	cur := ws
	if c, err := h.Spreads.WorkloadSpreads(ws.Namespace).Get(ws.Name); err == nil && newer(c, cur) {
		cur = c
	}
	h.mu.Lock()
	w := h.written[ws.UID]
	h.mu.Unlock()
	if w != nil && newer(w, cur) {
		cur = w
	}
	return cur, nil
}

func newer(a, b *appsv1alpha1.WorkloadSpread) bool {
	ra, _ := strconv.ParseInt(a.ResourceVersion, 10, 64)
	rb, _ := strconv.ParseInt(b.ResourceVersion, 10, 64)
	return a.UID == b.UID && ra > rb
}

// remember keeps the newest WorkloadSpread written or read here.
func (h *Handlers) remember(ws *appsv1alpha1.WorkloadSpread) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.written == nil {
		h.written = map[types.UID]*appsv1alpha1.WorkloadSpread{}
	}
	if old := h.written[ws.UID]; old == nil || newer(ws, old) {
		h.written[ws.UID] = ws
	}
}

// Forget drops what remember kept of a deleted WorkloadSpread.
func (h *Handlers) Forget(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.written, uid)
	delete(h.locks, uid)
}

func (h *Handlers) lock(uid types.UID) func() {
	h.mu.Lock()
	if h.locks == nil {
		h.locks = map[types.UID]*sync.Mutex{}
	}
	l := h.locks[uid]
	if l == nil {
		l = &sync.Mutex{}
		h.locks[uid] = l
	}
	h.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// initial are the subset statuses of a WorkloadSpread the reconciler has
// not written yet.
func (h *Handlers) initial(ctx context.Context, ws *appsv1alpha1.WorkloadSpread) ([]appsv1alpha1.WorkloadSpreadSubsetStatus, error) {
	replicas := int32(0)
	if spread.HasPercent(ws) {
		obj, err := h.Targets.Get(ctx, ws.Namespace, ws.Spec.TargetReference)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			replicas = workload.Replicas(obj)
		}
	}
	return spread.InitialStatuses(ws, replicas)
}

func (h *Handlers) now() time.Time {
	if h.Clock == nil {
		return time.Now()
	}
	return h.Clock.Now()
}

func (h *Handlers) uid() string {
	if h.NewUID != nil {
		return h.NewUID()
	}
	return string(uuid.NewUUID())
}
