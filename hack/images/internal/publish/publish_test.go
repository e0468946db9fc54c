package publish

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla-dev/flotilla/hack/images/internal/oci"
)

func TestNaming(t *testing.T) {
	d := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}
	for _, c := range []struct {
		n                      Naming
		tagged, pinned, binary string
	}{
		{Naming{Repo: "flotilla", Tag: "dev"}, "flotilla/cloneset-controller:dev", "flotilla/cloneset-controller@" + d.String(), "cloneset-controller"},
		{Naming{Registry: "127.0.0.1:5050", Repo: "flotilla", Tag: "v1"}, "127.0.0.1:5050/flotilla/probe-agent:v1", "127.0.0.1:5050/flotilla/probe-agent@" + d.String(), "probe-agent"},
	} {
		if got := c.n.Tagged(c.binary); got != c.tagged {
			t.Errorf("Tagged = %s, want %s", got, c.tagged)
		}
		if got := c.n.Pinned(c.binary, d); got != c.pinned {
			t.Errorf("Pinned = %s, want %s", got, c.pinned)
		}
	}
}

func TestLoopback(t *testing.T) {
	for reg, want := range map[string]bool{
		"127.0.0.1:5050": true, "localhost:5000": true, "[::1]:5000": true, "127.0.0.1": true,
		"ghcr.io": false, "10.0.0.1:5000": false, "registry.example.com:443": false,
	} {
		if got := Loopback(reg); got != want {
			t.Errorf("Loopback(%s) = %v, want %v", reg, got, want)
		}
	}
}

func TestFormatDigests(t *testing.T) {
	got := FormatDigests([]Entry{{"a-controller", "flotilla/a-controller@sha256:1"}, {"probe-agent", "r/flotilla/probe-agent@sha256:2"}})
	want := "a-controller flotilla/a-controller@sha256:1\nprobe-agent r/flotilla/probe-agent@sha256:2\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func testIndex(t *testing.T, name, data string) v1.ImageIndex {
	t.Helper()
	idx, err := oci.Index([]oci.Binary{
		{Name: name, Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Data: []byte(data + "-amd64")},
		{Name: name, Platform: v1.Platform{OS: "linux", Architecture: "arm64"}, Data: []byte(data + "-arm64")},
	}, oci.Options{GzipLevel: gzip.DefaultCompression})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func digest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLayoutListsEachIndexOnce(t *testing.T) {
	dir := t.TempDir() + "/oci"
	// A second run over the same directory must not keep the first run's entries.
	for run := 0; run < 2; run++ {
		l, err := NewLayout(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []string{"a-controller", "b-controller"} {
			if err := l.Add(testIndex(t, b, b), "flotilla/"+b+":dev"); err != nil {
				t.Fatal(err)
			}
		}
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("layout lists %d indexes, want 2", len(im.Manifests))
	}
	for i, b := range []string{"a-controller", "b-controller"} {
		desc := im.Manifests[i]
		if got := desc.Annotations[RefNameAnnotation]; got != "flotilla/"+b+":dev" {
			t.Errorf("entry %d named %q", i, got)
		}
		if want := digest(t, testIndex(t, b, b)); desc.Digest != want {
			t.Errorf("%s: layout has %s, built %s", b, desc.Digest, want)
		}
		// Every blob must be there: read back each platform's layer.
		child, err := top.ImageIndex(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		assertLayersReadable(t, child)
	}
}

func assertLayersReadable(t *testing.T, idx v1.ImageIndex) {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: %d layers, %v", m.Platform, len(layers), err)
		}
		if _, err := layers[0].DiffID(); err != nil {
			t.Errorf("%s: layer unreadable: %v", m.Platform, err)
		}
	}
}

// pushAndPull pushes an index to registry host and reads it back by tag.
func pushAndPull(t *testing.T, host, repo string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	idx := testIndex(t, "push-test", fmt.Sprintf("%s-%d", repo, time.Now().UnixNano()))
	ref := host + "/" + repo + ":test"
	if err := Push(ctx, idx, ref, Loopback(host)); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(r, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("reading back %s: %v", ref, err)
	}
	if gd, want := digest(t, got), digest(t, idx); gd != want {
		t.Errorf("registry serves %s as %s, pushed %s", ref, gd, want)
	}
	// The platform an arm64 node would pull must resolve to its own image.
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "arm64"}))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil || cfg.Architecture != "arm64" || cfg.Config.User != "65532:65532" {
		t.Errorf("arm64 image: config %+v, %v", cfg, err)
	}
}

// A push to an in-process registry (ggcr's, plain http on loopback) always runs.
func TestPushInProcessRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	pushAndPull(t, strings.TrimPrefix(srv.URL, "http://"), "flotilla/push-test")
}

// The push against hack/cluster's registry (REAL_NODES=1), the one the real nodes pull from.
func TestPushLocalRegistry(t *testing.T) {
	host := os.Getenv("FLOTILLA_REGISTRY")
	if host == "" {
		port := os.Getenv("REGISTRY_PORT")
		if port == "" {
			port = "5050"
		}
		host = net.JoinHostPort("127.0.0.1", port)
	}
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + host + "/v2/")
	if err != nil {
		t.Skipf("no registry at %s (%v): start one with `make cluster-up REAL_NODES=1` or set FLOTILLA_REGISTRY=host:port", host, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Skipf("registry at %s answers /v2/ with %s (wants credentials?): not the local registry", host, resp.Status)
	}
	pushAndPull(t, host, "flotilla/images-push-test")
}
