package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var (
	amd64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 = v1.Platform{OS: "linux", Architecture: "arm64"}
	opts  = Options{GzipLevel: gzip.DefaultCompression}
)

func TestLayerContents(t *testing.T) {
	raw, err := LayerTar("cloneset-controller", []byte("\x7fELF binary"))
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		mode     int64
		uid, gid int
		body     string
	}
	got := map[string]file{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !hdr.ModTime.Equal(epoch) {
			t.Errorf("%s: mtime %v, want the epoch", hdr.Name, hdr.ModTime)
		}
		if hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("%s: owner names %q/%q, want numeric ids only", hdr.Name, hdr.Uname, hdr.Gname)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got[hdr.Name] = file{mode: hdr.Mode, uid: hdr.Uid, gid: hdr.Gid, body: string(body)}
		order = append(order, hdr.Name)
	}
	want := map[string]file{
		"etc/":                {mode: 0o755},
		"etc/group":           {mode: 0o644, body: "root:x:0:\nnonroot:x:65532:\n"},
		"etc/passwd":          {mode: 0o644, body: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		"home/":               {mode: 0o755},
		"home/nonroot/":       {mode: 0o700, uid: UID, gid: GID},
		"tmp/":                {mode: 0o1777},
		"cloneset-controller": {mode: 0o755, body: "\x7fELF binary"},
	}
	if len(got) != len(want) {
		t.Errorf("entries %v, want %d", order, len(want))
	}
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("missing %s", name)
		} else if g != w {
			t.Errorf("%s = %+v, want %+v", name, g, w)
		}
	}
}

func TestLayerTarRejectsPaths(t *testing.T) {
	for _, name := range []string{"", "bin/x", "../x"} {
		if _, err := LayerTar(name, []byte("x")); err == nil {
			t.Errorf("LayerTar(%q) accepted", name)
		}
	}
}

func TestLayerIsGzipOCI(t *testing.T) {
	l, err := Layer("probe-agent", []byte("agent"), gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	mt, err := l.MediaType()
	if err != nil || mt != types.OCILayer {
		t.Fatalf("media type %q (%v), want %q", mt, err, types.OCILayer)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatalf("compressed layer is not gzip: %v", err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header carries name %q / time %v", zr.Name, zr.ModTime)
	}
}

func TestConfig(t *testing.T) {
	b := Binary{Name: "pub-controller", Platform: v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}
	diffID := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	c := Config(b, diffID, map[string]string{"org.opencontainers.image.revision": "abc"})
	if c.OS != "linux" || c.Architecture != "arm64" || c.Variant != "v8" {
		t.Errorf("platform %s/%s/%s", c.OS, c.Architecture, c.Variant)
	}
	if c.Config.User != "65532:65532" {
		t.Errorf("user %q", c.Config.User)
	}
	if len(c.Config.Entrypoint) != 1 || c.Config.Entrypoint[0] != "/pub-controller" {
		t.Errorf("entrypoint %q", c.Config.Entrypoint)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":    "pub-controller",
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.revision": "abc",
	} {
		if c.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Config.Labels[k], v)
		}
	}
	if !c.Created.Equal(epoch) || len(c.History) != 1 || !c.History[0].Created.Equal(epoch) {
		t.Errorf("created %v, history %+v: want the epoch", c.Created, c.History)
	}
	if len(c.RootFS.DiffIDs) != 1 || c.RootFS.DiffIDs[0] != diffID {
		t.Errorf("diff ids %v", c.RootFS.DiffIDs)
	}
}

func indexDigest(t *testing.T, builds []Binary) v1.Hash {
	t.Helper()
	idx, err := Index(builds, opts)
	if err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Building twice from the same binaries gives the same digest; any change of a binary, of the platform set
// or of their order gives another.
func TestIndexDigestReproducible(t *testing.T) {
	builds := func(amdData string) []Binary {
		return []Binary{
			{Name: "cronjob-controller", Platform: amd64, Data: []byte(amdData)},
			{Name: "cronjob-controller", Platform: arm64, Data: []byte("arm build")},
		}
	}
	first, second := indexDigest(t, builds("amd build")), indexDigest(t, builds("amd build"))
	if first != second {
		t.Fatalf("same binaries, digests %s and %s", first, second)
	}
	if other := indexDigest(t, builds("another amd build")); other == first {
		t.Errorf("a different binary kept digest %s", first)
	}
	b := builds("amd build")
	if other := indexDigest(t, b[:1]); other == first {
		t.Errorf("one platform less kept digest %s", first)
	}
	if other := indexDigest(t, []Binary{b[1], b[0]}); other == first {
		t.Errorf("platforms swapped kept digest %s", first)
	}
}

func TestIndexManifests(t *testing.T) {
	builds := []Binary{
		{Name: "probe-agent", Platform: amd64, Data: []byte("a")},
		{Name: "probe-agent", Platform: arm64, Data: []byte("b")},
	}
	idx, err := Index(builds, opts)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || len(im.Manifests) != 2 {
		t.Fatalf("index %s with %d manifests", im.MediaType, len(im.Manifests))
	}
	for i, desc := range im.Manifests {
		if desc.MediaType != types.OCIManifestSchema1 || desc.Platform == nil || !desc.Platform.Equals(builds[i].Platform) {
			t.Errorf("manifest %d: %s %v, want %v", i, desc.MediaType, desc.Platform, builds[i].Platform)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
			t.Errorf("manifest %d: config %s, layers %+v", i, m.Config.MediaType, m.Layers)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != builds[i].Platform.Architecture || len(cfg.History) != 1 {
			t.Errorf("manifest %d: config arch %s, history %d entries", i, cfg.Architecture, len(cfg.History))
		}
	}
}

func TestIndexRejectsMixedBinaries(t *testing.T) {
	_, err := Index([]Binary{
		{Name: "a", Platform: amd64, Data: []byte("a")},
		{Name: "b", Platform: arm64, Data: []byte("b")},
	}, opts)
	if err == nil {
		t.Fatal("an index over two programs was built")
	}
}

func TestSizes(t *testing.T) {
	big := bytes.Repeat([]byte("incompressible?"), 1000)
	idx, err := Index([]Binary{
		{Name: "x", Platform: amd64, Data: []byte("small")},
		{Name: "x", Platform: arm64, Data: big},
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := Sizes(idx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || !sizes[0].Platform.Equals(amd64) || !sizes[1].Platform.Equals(arm64) {
		t.Fatalf("sizes %+v", sizes)
	}
	for i, s := range sizes {
		img, err := idx.Image(mustManifest(t, idx).Manifests[i].Digest)
		if err != nil {
			t.Fatal(err)
		}
		layers, _ := img.Layers()
		want, _ := layers[0].Size()
		if s.Layer != want || s.Total <= s.Layer {
			t.Errorf("%v: layer %d (want %d), total %d", s.Platform, s.Layer, want, s.Total)
		}
	}
	if sizes[1].Layer <= sizes[0].Layer {
		t.Errorf("the bigger binary's layer is not bigger: %+v", sizes)
	}
}

func mustManifest(t *testing.T, idx v1.ImageIndex) *v1.IndexManifest {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return im
}
