package oci

import (
	"fmt"
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Source is what the OCI source label points at.
const Source = "https://github.com/flotilla-dev/flotilla"

// Binary is one platform's build of one program.
type Binary struct {
	Name     string      // file name, also the entrypoint /<Name> and the image's title
	Platform v1.Platform // os/architecture[/variant] it was built for
	Data     []byte
}

// Options are the parts of an image that do not come from the binary.
type Options struct {
	GzipLevel int
	// Labels are added to the config beside the title and source labels (e.g. a revision). Equal options give
	// equal digests: nothing here may change from one build to the next unless the caller means it to.
	Labels map[string]string
}

// Config returns the image config for binary whose single layer has the given diffID.
func Config(b Binary, diffID v1.Hash, labels map[string]string) *v1.ConfigFile {
	all := map[string]string{
		"org.opencontainers.image.title":  b.Name,
		"org.opencontainers.image.source": Source,
	}
	for k, v := range labels {
		all[k] = v
	}
	created := v1.Time{Time: epoch}
	return &v1.ConfigFile{
		Architecture: b.Platform.Architecture,
		OS:           b.Platform.OS,
		Variant:      b.Platform.Variant,
		Created:      created,
		Config: v1.Config{
			User:       strconv.Itoa(UID) + ":" + strconv.Itoa(GID),
			Entrypoint: []string{"/" + b.Name},
			WorkingDir: "/",
			Labels:     all,
		},
		RootFS: v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{diffID}},
		History: []v1.History{{
			Created:   created,
			CreatedBy: "flotilla-images: /" + b.Name + " (static binary, user " + UserName + ")",
			Comment:   "built without a container engine from " + Source,
		}},
	}
}

// Image returns the single-layer OCI image of b.
func Image(b Binary, opts Options) (v1.Image, error) {
	layer, err := Layer(b.Name, b.Data, opts.GzipLevel)
	if err != nil {
		return nil, err
	}
	diffID, err := layer.DiffID()
	if err != nil {
		return nil, fmt.Errorf("image of %s: diffID: %w", b.Name, err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, fmt.Errorf("image of %s: %w", b.Name, err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	// The config is set last and whole: it names the layer's diffID itself, so what is pushed is exactly what
	// Config returns (AppendLayers' own history entry is replaced by ours).
	img, err = mutate.ConfigFile(img, Config(b, diffID, opts.Labels))
	if err != nil {
		return nil, fmt.Errorf("image of %s: config: %w", b.Name, err)
	}
	return img, nil
}

// Index returns the OCI index over one program's builds, one manifest per platform in the order given (the
// order is part of the digest, so callers pass platforms in a fixed order).
func Index(builds []Binary, opts Options) (v1.ImageIndex, error) {
	if len(builds) == 0 {
		return nil, fmt.Errorf("index: no binaries")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range builds {
		if b.Name != builds[0].Name {
			return nil, fmt.Errorf("index of %s: binary %s does not belong in it", builds[0].Name, b.Name)
		}
		img, err := Image(b, opts)
		if err != nil {
			return nil, err
		}
		p := b.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, nil
}
