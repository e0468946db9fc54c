package oci

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// PlatformSize is what one platform's image weighs.
type PlatformSize struct {
	Platform v1.Platform
	Layer    int64 // compressed layer: what a node downloads
	Total    int64 // manifest + config + layer
}

// Sizes lists the size of each platform's image of idx, in index order.
func Sizes(idx v1.ImageIndex) ([]PlatformSize, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("sizes: %w", err)
	}
	var out []PlatformSize
	for _, desc := range im.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return nil, fmt.Errorf("sizes: image %s: %w", desc.Digest, err)
		}
		m, err := img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("sizes: manifest %s: %w", desc.Digest, err)
		}
		s := PlatformSize{Total: desc.Size + m.Config.Size}
		if desc.Platform != nil {
			s.Platform = *desc.Platform
		}
		for _, l := range m.Layers {
			s.Layer += l.Size
			s.Total += l.Size
		}
		out = append(out, s)
	}
	return out, nil
}
