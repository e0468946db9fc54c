// Package gobuild cross-compiles Go programs into the static, reproducible binaries the images carry.
package gobuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Flags are the build flags of every image binary: no cgo (the image has no libc), no local paths
// (-trimpath), no symbol tables (-s -w: a third smaller, and panics still print stack traces), and no VCS
// stamp (-buildvcs=false: a dirty work tree or another commit would change the bytes of an unchanged
// program), and gRPC's tracing left out (-tags grpcnotrace, as `make build`: golang.org/x/net/trace keeps every
// exported method alive; probe-agent is half the size and ~12 MiB smaller in RSS without it). Go's build ID hashes
// only the inputs, so equal sources give equal binaries.
var Flags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-tags=grpcnotrace"}

// Env returns the environment of a cross build for p on top of base (the caller's environment).
func Env(base []string, p v1.Platform) []string {
	env := append([]string(nil), base...)
	env = append(env, "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	// linux/arm/v7 and the like carry their variant in GOARM; arm64's "v8" is the only arm64 and needs none.
	if p.Architecture == "arm" && p.Variant != "" {
		env = append(env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	return env
}

// Dir is the directory under out that holds the binaries of platform p: out/linux_amd64, out/linux_arm64_v8.
func Dir(out string, p v1.Platform) string {
	parts := []string{p.OS, p.Architecture}
	if p.Variant != "" {
		parts = append(parts, p.Variant)
	}
	return filepath.Join(out, strings.Join(parts, "_"))
}

// Name is the binary name go build gives package pkg.
func Name(pkg string) string { return path.Base(pkg) }

// Build compiles packages for platform p into Dir(out, p) with one go build (they share the compile of
// their dependencies), running in dir so the caller's module or workspace resolves them.
func Build(ctx context.Context, dir, out string, p v1.Platform, packages []string) error {
	dst := Dir(out, p)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("build for %s: %w", p, err)
	}
	args := append([]string{"build", "-o", dst + string(filepath.Separator)}, Flags...)
	args = append(args, packages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = Env(os.Environ(), p)
	var stderr bytes.Buffer
	cmd.Stdout = os.Stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %w\n%s", p, err, stderr.String())
	}
	return nil
}
