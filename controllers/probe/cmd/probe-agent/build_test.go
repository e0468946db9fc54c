package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBuildsLeaveOutGRPCTracing: probe-agent links gRPC (the CRI client), whose golang.org/x/net/trace, unless built
// with -tags grpcnotrace, pulls html/template in and with it every exported method of every reachable type: twice the
// binary and ~12 MiB more RSS at rest (bench/RESULTS.md, issue 28). The tag must leave the package out, and every
// place that builds the binaries must pass it.
func TestBuildsLeaveOutGRPCTracing(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "grpcnotrace", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if slices.Contains(deps, "golang.org/x/net/trace") {
		t.Errorf("probe-agent built with -tags grpcnotrace still links golang.org/x/net/trace")
	}
	if !slices.Contains(deps, "google.golang.org/grpc") {
		t.Fatalf("probe-agent no longer links gRPC: this test (and the tag) may go")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Makefile", "hack/images/internal/gobuild/gobuild.go", "test/e2e/framework/binaries.go",
		"controllers/probe/internal/agent/footprint_bench_test.go"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "grpcnotrace") {
			t.Errorf("%s builds the binaries without -tags grpcnotrace", f)
		}
	}
}
