package rig

import (
	"archive/tar"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRigImages(t *testing.T) {
	bin := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(bin, imagesDir), 0o755))
	for _, p := range []string{"pause", "nodeinfo", "gpuplugin", "aiconform"} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, imagesDir, p), []byte("program "+p), 0o755))
	}
	bb := filepath.Join(bin, "busybox")
	require.NoError(t, os.WriteFile(bb, []byte("busybox"), 0o755))
	old := busybox
	busybox = bb
	t.Cleanup(func() { busybox = old })

	archive := filepath.Join(t.TempDir(), "images.tar")
	images, err := rigImages(bin)
	require.NoError(t, err)
	require.NoError(t, tarball.MultiRefWriteToFile(archive, images))

	for _, tt := range []struct {
		ref        string
		entrypoint string
		files      map[string]string // path -> content, or "-> target"
	}{
		{PauseImage, "/pause", map[string]string{"pause": "program pause"}},
		{NodeInfoImage, "/nodeinfo", map[string]string{"nodeinfo": "program nodeinfo"}},
		{GPUPluginImage, "/gpuplugin", map[string]string{"gpuplugin": "program gpuplugin"}},
		{AiconformImage, "/aiconform", map[string]string{"aiconform": "program aiconform"}},
		{ShellImage, "/bin/sh", map[string]string{"bin/": "", "bin/busybox": "busybox", "bin/sh": "-> busybox", "bin/ls": "-> busybox", "bin/uname": "-> busybox", "bin/cat": "-> busybox"}},
	} {
		t.Run(tt.ref, func(t *testing.T) {
			tag, err := name.NewTag(tt.ref)
			require.NoError(t, err)
			img, err := tarball.ImageFromPath(archive, &tag)
			require.NoError(t, err)
			cf, err := img.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, []string{tt.entrypoint}, cf.Config.Entrypoint)
			assert.Equal(t, "65534:65534", cf.Config.User, "not root")
			assert.Equal(t, "linux", cf.OS)
			layers, err := img.Layers()
			require.NoError(t, err)
			require.Len(t, layers, 1)
			rc, err := layers[0].Uncompressed()
			require.NoError(t, err)
			defer rc.Close()
			got := map[string]string{}
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				data, err := io.ReadAll(tr)
				require.NoError(t, err)
				got[h.Name] = string(data)
				if h.Typeflag == tar.TypeSymlink {
					got[h.Name] = "-> " + h.Linkname
				}
			}
			for p, want := range tt.files {
				assert.Equal(t, want, got[p], p)
			}
		})
	}

	// The same programs give the same images: a node re-imports nothing new.
	again, err := rigImages(bin)
	require.NoError(t, err)
	for ref, img := range images {
		d1, err := img.Digest()
		require.NoError(t, err)
		var d2 string
		for r2, img2 := range again {
			if r2.String() == ref.String() {
				d, err := img2.Digest()
				require.NoError(t, err)
				d2 = d.String()
			}
		}
		assert.Equal(t, d1.String(), d2, ref.String())
	}
}

func TestRealNodeAddresses(t *testing.T) {
	assert.Equal(t, "10.250.200.1", RealNodeIP(1).String())
	assert.Equal(t, "10.250.201.0/24", RealNodePodCIDR(1).String())
	assert.Equal(t, "10.250.207.0/24", RealNodePodCIDR(maxRealNodes).String())
	for i := 1; i <= maxRealNodes; i++ {
		assert.True(t, realNodeRange.Contains(RealNodeIP(i)))
		assert.True(t, realNodeRange.Contains(RealNodePodCIDR(i).Addr()))
		assert.True(t, VirtualRange.Contains(RealNodePodCIDR(i).Addr()))
		// Apart from the kwok GPU node's pods, the stand-ins' addresses.
		assert.False(t, RealNodePodCIDR(i).Overlaps(netip.MustParsePrefix(GPUNodePodCIDR)))
	}
}
