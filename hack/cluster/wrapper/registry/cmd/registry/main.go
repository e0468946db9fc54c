// Command registry serves distribution's registry (github.com/distribution/distribution/v3) with only the
// filesystem storage driver: upstream's cmd/registry links every cloud driver (S3, Azure, GCS), which would
// cost minutes of build time for nothing on a loopback test registry.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: registry CONFIG.yaml")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	cfg, err := configuration.Parse(f)
	if err != nil {
		return fmt.Errorf("parse config %s: %w", path, err)
	}
	r, err := registry.NewRegistry(context.Background(), cfg)
	if err != nil {
		return fmt.Errorf("new registry: %w", err)
	}
	return r.ListenAndServe()
}
