// Package oci builds the OCI images of Flotilla's binaries without a container engine: one layer holding the
// static binary and the few files a non-root process expects, a config naming user and entrypoint, and an
// index over the platforms. Everything here is a pure function of its inputs, so building twice from the same
// binaries gives the same digests.
package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the binaries run as: distroless' "nonroot", so a Pod's runAsNonRoot check passes and files the
// binary writes (under /tmp) are not root's.
const (
	UID      = 65532
	GID      = 65532
	UserName = "nonroot"
)

// epoch is the one timestamp written into a layer or config: wall-clock times would change the digest of
// every build.
var epoch = time.Unix(0, 0).UTC()

// entry is one file or directory of the layer.
type entry struct {
	name string
	mode int64
	uid  int
	gid  int
	body []byte // nil for a directory
}

// rootfsEntries lists the layer's contents in the order written: parents before children. The binary is
// owned by root and only executable by others, so the process cannot rewrite it; /tmp is the one writable
// place (Go's os.TempDir, client-go's cache dirs).
func rootfsEntries(binaryName string, binary []byte) []entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n",
		UserName, UID, GID, UserName, UserName)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", UserName, GID)
	return []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "home/", mode: 0o755},
		{name: "home/" + UserName + "/", mode: 0o700, uid: UID, gid: GID},
		{name: "tmp/", mode: 0o1777},
		{name: binaryName, mode: 0o755, body: binary},
	}
}

// LayerTar returns the uncompressed tar of the layer for binary, installed as /<binaryName>.
func LayerTar(binaryName string, binary []byte) ([]byte, error) {
	if binaryName == "" || path.Base(binaryName) != binaryName {
		return nil, fmt.Errorf("binary name %q: want a plain file name", binaryName)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range rootfsEntries(binaryName, binary) {
		if err := writeEntry(tw, e); err != nil {
			return nil, fmt.Errorf("layer of %s: %w", binaryName, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer of %s: closing tar: %w", binaryName, err)
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, e entry) error {
	hdr := &tar.Header{
		Name:    e.name,
		Mode:    e.mode,
		Uid:     e.uid,
		Gid:     e.gid,
		ModTime: epoch,
		// USTAR holds everything here and, unlike PAX, never adds access or change times.
		Format: tar.FormatUSTAR,
	}
	if e.body == nil {
		hdr.Typeflag = tar.TypeDir
	} else {
		hdr.Typeflag = tar.TypeReg
		hdr.Size = int64(len(e.body))
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("header of %s: %w", e.name, err)
	}
	if _, err := tw.Write(e.body); err != nil {
		return fmt.Errorf("writing %s: %w", e.name, err)
	}
	return nil
}

// Gzip compresses a layer tar. The header carries no name and no time, and Go's compressor is deterministic
// for a given level, so the compressed digest is as reproducible as the tar.
func Gzip(data []byte, level int) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, fmt.Errorf("gzip level %d: %w", level, err)
	}
	if _, err := zw.Write(data); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// Layer returns the OCI layer for binary, compressed once here: ggcr would otherwise gzip it again for the
// digest, the layout and the push.
func Layer(binaryName string, binary []byte, gzipLevel int) (v1.Layer, error) {
	raw, err := LayerTar(binaryName, binary)
	if err != nil {
		return nil, err
	}
	compressed, err := Gzip(raw, gzipLevel)
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", binaryName, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", binaryName, err)
	}
	return layer, nil
}
