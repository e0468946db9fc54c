// Package cri is the node agent's one client of the node's CRI runtime and image services (k8s.io/cri-client),
// shared by its workers: exec probes (ExecSync), ContainerRecreateRequests (ListContainers, ExecSync for a
// preStop, StopContainer) and image pre-download (PullImage with the credentials of the pull secrets that match
// the image's registry, ImageStatus, RemoveImage).
package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	criremote "k8s.io/cri-client/pkg"
)

// connectTimeout bounds the dial of the runtime's socket.
const connectTimeout = 10 * time.Second

// Connect connects to the CRI runtime service at endpoint (for example unix:///run/containerd/containerd.sock);
// the runtime must answer Version.
func Connect(ctx context.Context, endpoint string) (criapi.RuntimeService, error) {
	rs, err := criremote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(connectTimeout).
		WithTracerProvider(nil).
		Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to CRI runtime %s: %w", endpoint, err)
	}
	return rs, nil
}

// ConnectImages connects to the CRI image service at endpoint (containerd serves both services on one socket).
func ConnectImages(ctx context.Context, endpoint string) (Images, error) {
	is, err := criremote.NewRemoteImageServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(connectTimeout).
		WithTracerProvider(nil).
		Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to CRI image service %s: %w", endpoint, err)
	}
	return is, nil
}

// Images is what the agent uses of the CRI image service: a subset of criapi.ImageManagerService, so the
// remote client is one, and FakeImages stands in for it in unit tests.
type Images interface {
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error)
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
}

var _ Images = criapi.ImageManagerService(nil)

// Pull pulls image (name:tag or name@digest) with each of auths in turn until one succeeds, as OpenKruise's
// daemon and the kubelet do; with no auths it pulls anonymously. When every auth fails the error joins theirs.
// It returns the image reference the runtime reports.
func Pull(ctx context.Context, images Images, image string, auths []*runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	spec := &runtimeapi.ImageSpec{Image: image}
	if len(auths) == 0 {
		ref, err := images.PullImage(ctx, spec, nil, sandbox)
		if err != nil {
			return "", fmt.Errorf("pull image %s: %w", image, err)
		}
		return ref, nil
	}
	var errs []error
	for _, a := range auths {
		ref, err := images.PullImage(ctx, spec, a, sandbox)
		if err == nil {
			return ref, nil
		}
		errs = append(errs, fmt.Errorf("as %q: %w", a.GetUsername(), err))
	}
	return "", fmt.Errorf("pull image %s: %w", image, errors.Join(errs...))
}

// Present returns the runtime's record of image, nil when the node does not have it.
func Present(ctx context.Context, images Images, image string) (*runtimeapi.Image, error) {
	resp, err := images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false)
	if err != nil {
		return nil, fmt.Errorf("image status of %s: %w", image, err)
	}
	return resp.GetImage(), nil
}
