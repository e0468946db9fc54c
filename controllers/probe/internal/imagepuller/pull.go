package imagepuller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/node/cri"
)

// Events kruise-daemon records on the NodeImage (and, on failure, on the ImagePullJobs that asked).
const (
	PullImageSucceed = "PullImageSucceed"
	PullImageFailed  = "PullImageFailed"
)

// pullingBy is the sandbox annotation kruise-daemon sets on every PullImage: who pulls.
const pullingBy = "apps.kruise.io/pulling-image-by"

func loggerFrom(ctx context.Context) klog.Logger { return klog.FromContext(ctx) }

// task is one image tag at one version: its status, and the cancel of its pull while it runs.
type task struct {
	version int64
	cancel  context.CancelFunc

	mu     sync.Mutex
	status appsv1beta1.ImageTagStatus
}

func (t *task) snapshot() appsv1beta1.ImageTagStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	return *t.status.DeepCopy()
}

func (t *task) stop() { t.cancel() }

// set changes the status unless the task was stopped (a stopped task's status is no longer reported).
func (t *task) set(ctx context.Context, change func(*appsv1beta1.ImageTagStatus)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	change(&t.status)
	return true
}

// start runs a task pulling k at spec's version: Waiting until a slot is free, then Pulling, then Succeeded or
// Failed. The caller holds w.mu.
func (w *Worker) start(parent context.Context, ni *appsv1beta1.NodeImage, k tagKey, spec appsv1beta1.ImageTagSpec,
	secrets []appsv1beta1.ReferenceObject, sandbox *appsv1beta1.SandboxConfig) *task {
	ctx, cancel := context.WithCancel(parent)
	t := &task{version: spec.Version, cancel: cancel,
		status: appsv1beta1.ImageTagStatus{Tag: k.Tag, Phase: appsv1beta1.ImagePhaseWaiting, Version: spec.Version}}
	ref := &corev1.ObjectReference{APIVersion: appsv1beta1.SchemeGroupVersion.String(), Kind: "NodeImage", Name: ni.Name, UID: ni.UID}
	go func() {
		logger := loggerFrom(ctx).WithValues("image", k.reference(), "version", spec.Version)
		ctx := klog.NewContext(ctx, logger)
		select {
		case w.slots <- struct{}{}:
			defer func() { <-w.slots }()
		case <-ctx.Done():
			return
		}
		start := w.clock.Now()
		if !t.set(ctx, func(s *appsv1beta1.ImageTagStatus) {
			s.Phase, s.StartTime = appsv1beta1.ImagePhasePulling, now(start)
		}) {
			return
		}
		w.changed()
		auths := cri.Credentials(k.reference(), w.secrets(ctx, secrets))
		imageID, err := w.pull(ctx, k, attemptsFor(spec, start), auths, sandboxConfig(sandbox))
		if ctx.Err() != nil {
			logger.V(2).Info("Pull stopped")
			return
		}
		t.set(ctx, func(s *appsv1beta1.ImageTagStatus) {
			s.CompletionTime = now(w.clock.Now())
			if err != nil {
				s.Phase, s.Message = appsv1beta1.ImagePhaseFailed, err.Error()
				return
			}
			s.Phase, s.Progress, s.ImageID = appsv1beta1.ImagePhaseSucceeded, 100, imageID
		})
		w.changed()
		if err != nil {
			logger.Error(err, "Pull failed")
			for i := range spec.OwnerReferences {
				w.recorder.Eventf(&spec.OwnerReferences[i], corev1.EventTypeWarning, PullImageFailed, "Image %s %v", k.reference(), err)
			}
			w.recorder.Eventf(ref, corev1.EventTypeWarning, PullImageFailed, "Image %s %v", k.reference(), err)
			return
		}
		logger.Info("Pulled", "cost", w.clock.Since(start))
		w.recorder.Eventf(ref, corev1.EventTypeNormal, PullImageSucceed, "Image %s, ecalpsedTime %v", k.reference(), w.clock.Since(start))
	}()
	return t
}

// pull makes the attempts a tags's policy allows and returns the imageID kruise-daemon reports
// ("<image>@<runtime image id>"), once ImageStatus lists the image.
func (w *Worker) pull(ctx context.Context, k tagKey, a attempts, auths []*runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	var last error
	for i := 0; i <= a.Retries; i++ {
		if i > 0 {
			loggerFrom(ctx).Info("Pull failed, backing off", "attempt", i, "err", last)
			select {
			case <-w.clock.After(backoff(i - 1)):
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		timeout, ok := a.attemptTimeout(w.clock.Now())
		if !ok {
			return "", errors.New("pulling exceeds the activeDeadlineSeconds")
		}
		var id string
		id, last = w.attempt(ctx, k, a.SkipPresent, timeout, auths, sandbox)
		if last == nil {
			return id, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	return "", last
}

// attempt is one PullImage within timeout (none when skipPresent and the node has the image), then the
// ImageStatus that must list the image.
func (w *Worker) attempt(ctx context.Context, k tagKey, skipPresent bool, timeout time.Duration,
	auths []*runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ref := k.reference()
	if skipPresent {
		if img, err := cri.Present(ctx, w.images, ref); err == nil && img != nil {
			return k.Image + "@" + img.Id, nil
		}
	}
	if _, err := cri.Pull(ctx, w.images, ref, auths, sandbox); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("pulling image %s is canceled: no answer within %v", ref, timeout)
		}
		return "", err
	}
	img, err := cri.Present(ctx, w.images, ref)
	if err != nil {
		return "", err
	}
	if img == nil {
		return "", fmt.Errorf("image %s pulled, yet the runtime does not list it", ref)
	}
	return k.Image + "@" + img.Id, nil
}

// sandboxConfig is the PodSandboxConfig kruise-daemon passes to PullImage: the image's labels and annotations,
// with its own pulling-image-by annotation.
func sandboxConfig(s *appsv1beta1.SandboxConfig) *runtimeapi.PodSandboxConfig {
	out := &runtimeapi.PodSandboxConfig{Annotations: map[string]string{}}
	if s != nil {
		out.Labels = s.Labels
		for k, v := range s.Annotations {
			out.Annotations[k] = v
		}
	}
	out.Annotations[pullingBy] = "kruise-daemon"
	return out
}
