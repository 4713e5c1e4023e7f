package rig

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The images a real node has. Nothing is ever pulled: each is assembled
// here from a static binary and imported into the node's containerd, and a
// pod names it like any image (imagePullPolicy IfNotPresent or Never).
const (
	// PauseImage is the sandbox image of the node's containerd, under the
	// name its CRI configuration and aiconform's --probe-image default
	// use: rig/images/pause, a program of the project's.
	PauseImage = "registry.k8s.io/pause:3.10"
	// NodeInfoImage runs rig/images/nodeinfo, which prints what a
	// container sees of its kernel and devices and exits.
	NodeInfoImage = "docker.io/aiconform/rig-nodeinfo:dev"
	// GPUPluginImage runs rig/images/gpuplugin, the real nodes' stand-in
	// accelerator device plugin (realgpu.go).
	GPUPluginImage = "docker.io/aiconform/rig-gpu-plugin:dev"
	// AiconformImage runs aiconform itself (cmd/aiconform), static, as
	// nobody, with no shell: the shape of the release image, for the
	// in-cluster Job of docs/deploy.
	AiconformImage = "docker.io/aiconform/aiconform:dev"
	// ShellImage has a shell and the few commands aiconform's printing
	// probes run (sh, ls, cat, uname): Debian's static BusyBox, for
	// --probe-shell-image.
	ShellImage = "docker.io/aiconform/rig-shell:dev"
)

// imagesDir is where make puts the images' programs, under the rig's bin
// folder (`make rig-images`).
const imagesDir = "images"

// busybox is Debian's busybox-static (tools/host-packages installs it), and
// shellApplets the names the shell image answers to.
var busybox = "/bin/busybox"

var shellApplets = []string{"sh", "ls", "cat", "uname", "echo", "sleep", "true"}

// ImageNames are the images every real node has.
func ImageNames() []string {
	return []string{PauseImage, NodeInfoImage, GPUPluginImage, AiconformImage, ShellImage}
}

// imageFile is one file of an image's only layer.
type imageFile struct {
	path string // absolute, in the image
	data []byte
	link string // a symlink's target instead of data
}

// rigImages assembles the images from the programs in binDir.
func rigImages(binDir string) (map[name.Reference]v1.Image, error) {
	out := map[name.Reference]v1.Image{}
	add := func(ref string, files []imageFile, entrypoint ...string) error {
		r, err := name.ParseReference(ref)
		if err != nil {
			return err
		}
		img, err := buildImage(files, entrypoint)
		if err != nil {
			return fmt.Errorf("image %s: %w", ref, err)
		}
		out[r] = img
		return nil
	}
	read := func(p string) ([]byte, error) {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%w (run `make rig-images`, and tools/host-packages for BusyBox)", err)
		}
		return data, nil
	}
	// Each program alone at the root of its image, and its entrypoint.
	for _, im := range []struct{ ref, program string }{
		{PauseImage, "pause"}, {NodeInfoImage, "nodeinfo"}, {GPUPluginImage, "gpuplugin"}, {AiconformImage, "aiconform"},
	} {
		data, err := read(filepath.Join(binDir, imagesDir, im.program))
		if err != nil {
			return nil, err
		}
		if err := add(im.ref, []imageFile{{path: "/" + im.program, data: data}}, "/"+im.program); err != nil {
			return nil, err
		}
	}
	bb, err := read(busybox)
	if err != nil {
		return nil, err
	}
	shell := []imageFile{{path: "/bin/busybox", data: bb}}
	for _, a := range shellApplets {
		shell = append(shell, imageFile{path: "/bin/" + a, link: "busybox"})
	}
	if err := add(ShellImage, shell, "/bin/sh"); err != nil {
		return nil, err
	}
	return out, nil
}

// buildImage is an image of one layer holding files, run as nobody.
func buildImage(files []imageFile, entrypoint []string) (v1.Image, error) {
	layer, err := layerOf(files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = entrypoint
	cf.Config.User = "65534:65534"
	return mutate.ConfigFile(img, cf)
}

// layerOf is an uncompressed layer of files (and their folders), in a fixed
// order with zero times, so the same programs give the same digest.
func layerOf(files []imageFile) (v1.Layer, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		for d := filepath.Dir(f.path); d != "/" && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755}); err != nil {
				return nil, err
			}
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.path[1:], Mode: 0o755, Size: int64(len(f.data))}
		if f.link != "" {
			h = &tar.Header{Typeflag: tar.TypeSymlink, Name: f.path[1:], Linkname: f.link, Mode: 0o777}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// importImages writes the rig's images as one archive at archive and
// imports it into the CRI's namespace of the containerd at sock.
func importImages(ctx context.Context, binDir, sock, archive string) error {
	images, err := rigImages(binDir)
	if err != nil {
		return err
	}
	if err := tarball.MultiRefWriteToFile(archive, images); err != nil {
		return fmt.Errorf("write %s: %w", archive, err)
	}
	out, err := exec.CommandContext(ctx, "ctr", "--address", sock, "--namespace", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import: %v: %s", err, out)
	}
	return nil
}
