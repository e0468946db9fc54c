// Package publish names the built images and puts them where they are used: an OCI layout on disk, a
// registry, and the digests file from which deploy overlays pin the images.
package publish

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// RefNameAnnotation names an index in the layout (what `crane`, containerd's import and skopeo read).
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// Naming turns a binary name into image names: <registry>/<repo>/<binary>:<tag>, the registry part omitted
// when empty (the deploy components' own `flotilla/<binary>:dev`).
type Naming struct {
	Registry string // host[:port], may be empty
	Repo     string // e.g. "flotilla"
	Tag      string
}

// Repository is the image name without tag or digest.
func (n Naming) Repository(binary string) string {
	parts := []string{n.Repo, binary}
	if n.Registry != "" {
		parts = append([]string{n.Registry}, parts...)
	}
	return strings.Join(parts, "/")
}

// Tagged is the image name with its tag.
func (n Naming) Tagged(binary string) string { return n.Repository(binary) + ":" + n.Tag }

// Pinned is the image name with its digest, as the digests file and kustomize's images list take it.
func (n Naming) Pinned(binary string, digest v1.Hash) string {
	return n.Repository(binary) + "@" + digest.String()
}

// Loopback reports whether registry is on this machine; such registries (hack/cluster's on 127.0.0.1)
// speak plain http.
func Loopback(registry string) bool {
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Layout is an OCI image layout directory holding every image of a run, each index annotated with its
// tagged name.
type Layout struct{ path layout.Path }

// NewLayout empties dir and starts a layout there: a layout only grows, so stale images of an earlier run
// would otherwise stay listed and their blobs kept.
func NewLayout(dir string) (*Layout, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("layout %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
		return nil, fmt.Errorf("layout %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", dir, err)
	}
	return &Layout{path: p}, nil
}

// Add writes idx's blobs and lists it under refName.
func (l *Layout) Add(idx v1.ImageIndex, refName string) error {
	err := l.path.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefNameAnnotation: refName}))
	if err != nil {
		return fmt.Errorf("layout %s: adding %s: %w", l.path, refName, err)
	}
	return nil
}

// Push sends idx with every image and blob it holds to the registry as ref (a tagged name). Credentials come
// from the docker config (~/.docker/config.json) if the registry asks for any; insecure allows plain http.
func Push(ctx context.Context, idx v1.ImageIndex, ref string, insecure bool, opts ...remote.Option) error {
	var nameOpts []name.Option
	if insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nameOpts...)
	if err != nil {
		return fmt.Errorf("push: image name %q: %w", ref, err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.WriteIndex(r, idx, opts...); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}

// Entry is one line of the digests file.
type Entry struct {
	Binary string
	Pinned string // <repository>@sha256:...
}

// FormatDigests renders the digests file: "<binary> <repository>@sha256:<hex>" per line, in the order given.
func FormatDigests(entries []Entry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %s\n", e.Binary, e.Pinned)
	}
	return b.String()
}

// WriteDigests writes the digests file through a rename, so a reader never sees half of it.
func WriteDigests(path string, entries []Entry) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(FormatDigests(entries)), 0o644); err != nil {
		return fmt.Errorf("digests file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("digests file: %w", err)
	}
	return nil
}
