package gobuild

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/flotilla-dev/flotilla/hack/images/internal/oci"
)

func TestDir(t *testing.T) {
	for _, c := range []struct {
		p    v1.Platform
		want string
	}{
		{v1.Platform{OS: "linux", Architecture: "amd64"}, "out/linux_amd64"},
		{v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, "out/linux_arm64_v8"},
	} {
		if got := Dir("out", c.p); got != c.want {
			t.Errorf("Dir(%v) = %s, want %s", c.p, got, c.want)
		}
	}
}

func TestEnvSetsPlatformLast(t *testing.T) {
	env := Env([]string{"GOOS=darwin", "CGO_ENABLED=1"}, v1.Platform{OS: "linux", Architecture: "arm", Variant: "v7"})
	// exec uses the last value of a duplicated variable: ours must come after the caller's.
	want := map[string]string{"GOOS": "linux", "GOARCH": "arm", "CGO_ENABLED": "0", "GOARM": "7"}
	last := map[string]string{}
	for _, kv := range env {
		k, v, _ := bytes.Cut([]byte(kv), []byte("="))
		last[string(k)] = string(v)
	}
	for k, v := range want {
		if last[k] != v {
			t.Errorf("%s=%s, want %s", k, last[k], v)
		}
	}
}

// buildImage compiles the hello module in src into a fresh directory and returns the binary and the digest
// of its image index.
func buildImage(t *testing.T, src string) ([]byte, v1.Hash) {
	t.Helper()
	p := v1.Platform{OS: "linux", Architecture: "amd64"}
	out := t.TempDir()
	if err := Build(context.Background(), src, out, p, []string{"./hello"}); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(filepath.Join(Dir(out, p), "hello"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := oci.Index([]oci.Binary{{Name: "hello", Platform: p, Data: bin}}, oci.Options{GzipLevel: gzip.DefaultCompression})
	if err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return bin, d
}

// copySource writes a module holding testdata/hello with the given greeting; each copy is built from its
// own directory, as two checkouts would be, so -trimpath is what keeps the paths out of the binary.
func copySource(t *testing.T, greeting string) string {
	t.Helper()
	dir := t.TempDir()
	main, err := os.ReadFile("testdata/hello/main.go")
	if err != nil {
		t.Fatal(err)
	}
	main = bytes.Replace(main, []byte(`"hello"`), []byte(`"`+greeting+`"`), 1)
	if err := os.MkdirAll(filepath.Join(dir, "hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"go.mod":        []byte("module example.com/hello\n\ngo 1.26.0\n"),
		"hello/main.go": main,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The whole chain is reproducible: two builds of the same source from different directories, the second
// with an empty build cache, give the same binary and the same image digest; a changed source gives another.
func TestBuildReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a program twice")
	}
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "")
	src1 := copySource(t, "hello")
	bin1, d1 := buildImage(t, src1)
	// With -trimpath the build cache would hand the second build the first one's output: an empty cache makes
	// it compile and link again.
	t.Setenv("GOCACHE", t.TempDir())
	bin2, d2 := buildImage(t, copySource(t, "hello"))
	if !bytes.Equal(bin1, bin2) {
		t.Errorf("two builds of the same source differ (%d and %d bytes)", len(bin1), len(bin2))
	}
	if d1 != d2 {
		t.Errorf("same source, image digests %s and %s", d1, d2)
	}
	if bytes.Contains(bin1, []byte(src1)) {
		t.Errorf("binary contains its source directory %s", src1)
	}
	if _, d3 := buildImage(t, copySource(t, "bonjour")); d3 == d1 {
		t.Errorf("a changed source kept digest %s", d1)
	}
}
