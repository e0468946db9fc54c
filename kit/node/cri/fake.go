package cri

import (
	"context"
	"fmt"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FakeImages is an in-memory image service for unit tests: PullImage succeeds for images in Registry (with the
// auth Registry requires, if any), records every call, and blocks while Hold has the image.
type FakeImages struct {
	mu sync.Mutex
	// Registry: image → the username a pull must present ("" = anonymous pulls allowed). Absent: not found.
	Registry map[string]string
	// Present: image → image ID of what the node has.
	Present map[string]string
	// Hold: pulls of these images block until the context ends (a pull that never finishes).
	Hold map[string]bool
	// Pulls records each PullImage call: image and the username presented.
	Pulls []FakePull
}

// FakePull is one recorded PullImage call.
type FakePull struct{ Image, Username string }

var _ Images = (*FakeImages)(nil)

// NewFakeImages returns a FakeImages serving registry (image → required username, "" for anonymous).
func NewFakeImages(registry map[string]string) *FakeImages {
	return &FakeImages{Registry: registry, Present: map[string]string{}, Hold: map[string]bool{}}
}

// PullImage implements Images.
func (f *FakeImages) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	f.Pulls = append(f.Pulls, FakePull{Image: image.Image, Username: auth.GetUsername()})
	hold := f.Hold[image.Image]
	f.mu.Unlock()
	if hold {
		<-ctx.Done()
		return "", ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	user, ok := f.Registry[image.Image]
	switch {
	case !ok:
		return "", fmt.Errorf("%s: not found", image.Image)
	case user != "" && user != auth.GetUsername():
		return "", fmt.Errorf("%s: 401 Unauthorized", image.Image)
	}
	id := "sha256:" + image.Image
	f.Present[image.Image] = id
	return id, nil
}

// ImageStatus implements Images.
func (f *FakeImages) ImageStatus(_ context.Context, image *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.Present[image.Image]
	if !ok {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: id, RepoTags: []string{image.Image}}}, nil
}

// RemoveImage implements Images.
func (f *FakeImages) RemoveImage(_ context.Context, image *runtimeapi.ImageSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.Present, image.Image)
	return nil
}

// PullCount is how many PullImage calls named image.
func (f *FakeImages) PullCount(image string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.Pulls {
		if p.Image == image {
			n++
		}
	}
	return n
}

// Calls is how many PullImage calls there were.
func (f *FakeImages) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Pulls)
}

// ID is the image ID the node has for image, "" when it does not have it.
func (f *FakeImages) ID(image string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Present[image]
}

// SetHold makes pulls of image block until their context ends (hold) or go through.
func (f *FakeImages) SetHold(image string, hold bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Hold[image] = hold
}
