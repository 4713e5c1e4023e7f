package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// ImageDir is the OCI image layout under Options.Out.
	ImageDir = "image"
	// ImagePath is the binary's path in the image, its entrypoint.
	ImagePath = "/" + project
	// ImageUser is the image's user: not root, and no name to look up
	// (the image has no /etc/passwd). A pod's runAsUser overrides it.
	ImageUser = "65532:65532"
)

// imageTag is the tag of a release's image: its version.
func imageTag(rel *Release) string { return rel.Version }

// imageLabels are the image's OCI labels, also the index's annotations.
func imageLabels(rel *Release) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":   repoURL,
		"org.opencontainers.image.revision": rel.Commit,
		"org.opencontainers.image.version":  rel.Version,
		"org.opencontainers.image.created":  rel.Time.Format(time.RFC3339),
	}
}

// writeImages writes the image of every linux binary as one multi-arch
// index in the OCI image layout ImageDir, and linux/amd64's image alone
// as a docker-archive tarball (`ctr images import`, `docker load`),
// whose name it returns ("" without linux/amd64).
//
// Each image is FROM scratch: one layer holding only the static binary,
// run as ImageUser. Nothing else is needed: aiconform reads the cluster's
// CA from its kubeconfig or the pod's ServiceAccount, never the system's
// roots; it runs no shell and looks up no user name.
func writeImages(out string, rel *Release) (string, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var amd64 v1.Image
	for _, b := range rel.Binaries {
		if b.OS != "linux" {
			continue
		}
		img, err := buildImage(filepath.Join(out, b.Path), b.Arch, rel)
		if err != nil {
			return "", fmt.Errorf("image linux/%s: %w", b.Arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: b.Arch}},
		})
		if b.Arch == "amd64" {
			amd64 = img
		}
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return "", err
	}
	if len(m.Manifests) == 0 {
		return "", nil
	}
	idx = mutate.Annotations(idx, imageLabels(rel)).(v1.ImageIndex)
	digest, err := idx.Digest()
	if err != nil {
		return "", err
	}
	rel.ImageDigest = digest.String()
	ref, err := name.NewTag(imageRepo + ":" + imageTag(rel))
	if err != nil {
		return "", err
	}
	// index.json names the multi-arch index, as buildx's OCI exporter
	// does: by tag for skopeo and the OCI tools, by full name for
	// containerd's import.
	p, err := layout.Write(filepath.Join(out, ImageDir), empty.Index)
	if err != nil {
		return "", err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": imageTag(rel),
		"io.containerd.image.name":          ref.Name(),
	})); err != nil {
		return "", err
	}
	if amd64 == nil {
		return "", nil
	}
	tarName := fmt.Sprintf("%s_%s_image_linux_amd64.tar", project, strings.TrimPrefix(rel.Version, "v"))
	if err := tarball.WriteToFile(filepath.Join(out, tarName), ref, amd64); err != nil {
		return "", err
	}
	return tarName, nil
}

// buildImage is the image of one linux binary.
func buildImage(binary, arch string, rel *Release) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	layer, err := binaryLayer(data, rel.Time)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: rel.Time}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "tools/release: " + ImagePath + ", the static binary of " + project + " " + rel.Version},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture = "linux", arch
	cf.Config = v1.Config{
		Entrypoint: []string{ImagePath},
		User:       ImageUser,
		Labels:     imageLabels(rel),
	}
	return mutate.ConfigFile(img, cf)
}

// binaryLayer is a layer of one file, the binary at ImagePath: owned by
// root, executable by all, dated at the commit.
func binaryLayer(data []byte, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(ImagePath, "/"), Mode: 0o755, Size: int64(len(data)), ModTime: mtime}
	if err := tw.WriteHeader(h); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
