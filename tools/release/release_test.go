package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/krew/pkg/index"
	"sigs.k8s.io/yaml"
)

// testPlatforms are what the tests build, once, in TestMain: the image's
// two platforms and the one zip; darwin's builds differ from these only in
// GOOS.
var testPlatforms = []string{"linux/amd64", "linux/arm64", "windows/amd64"}

// The release TestMain built, and where.
var (
	rel    *Release
	relOut string
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "release-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		relOut = filepath.Join(dir, "dist")
		start := time.Now()
		rel, err = Build(context.Background(), Options{Root: "../..", Out: relOut, Platforms: testPlatforms})
		if err != nil {
			fmt.Fprintf(os.Stderr, "release: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "built %s for %v in %s\n", rel.Version, testPlatforms, time.Since(start).Round(time.Second))
		return m.Run()
	}())
}

func binaryOf(t *testing.T, goos, goarch string) Binary {
	t.Helper()
	for _, b := range rel.Binaries {
		if b.OS == goos && b.Arch == goarch {
			return b
		}
	}
	t.Fatalf("no %s/%s binary", goos, goarch)
	return Binary{}
}

func readOut(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(relOut, name))
	require.NoError(t, err)
	return data
}

// TestVersionStamp: a snapshot says it is one, of which commit, and the
// binary prints it with `aiconform version`, beside the commit Go stamped.
func TestVersionStamp(t *testing.T) {
	assert.Regexp(t, `^v0\.0\.0-SNAPSHOT-[0-9a-f]{12}(-dirty)?$`, rel.Version)
	assert.True(t, strings.HasPrefix(rel.Commit, strings.TrimSuffix(strings.TrimPrefix(rel.Version, "v0.0.0-SNAPSHOT-"), "-dirty")))
	assert.Equal(t, rel.Modified, strings.HasSuffix(rel.Version, "-dirty"))

	b := binaryOf(t, "linux", runtime.GOARCH)
	if runtime.GOOS != "linux" {
		t.Skip("runs the linux binary")
	}
	out, err := exec.Command(filepath.Join(relOut, b.Path), "version", "-o", "json").Output()
	require.NoError(t, err)
	var v struct {
		Version  string `json:"version"`
		Commit   string `json:"commit"`
		Modified bool   `json:"modified"`
		Platform string `json:"platform"`
	}
	require.NoError(t, json.Unmarshal(out, &v))
	assert.Equal(t, rel.Version, v.Version)
	assert.Equal(t, rel.Commit, v.Commit)
	assert.Equal(t, rel.Modified, v.Modified)
	assert.Equal(t, "linux/"+runtime.GOARCH, v.Platform)
}

// TestArchives: each holds the binary, README.md and LICENSE when the
// repository has one, nothing else, dated at the commit, owned by root.
func TestArchives(t *testing.T) {
	docs, err := archiveDocs("../..")
	require.NoError(t, err)
	for _, b := range rel.Binaries {
		t.Run(b.OS+"_"+b.Arch, func(t *testing.T) {
			want := map[string][]byte{b.Exe(): readOut(t, b.Path)}
			for _, d := range docs {
				want[d.name] = d.data
			}
			got := map[string][]byte{}
			data := readOut(t, b.Archive)
			if b.OS == "windows" {
				require.True(t, strings.HasSuffix(b.Archive, ".zip"), b.Archive)
				zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
				require.NoError(t, err)
				for _, f := range zr.File {
					assert.True(t, f.Modified.Equal(rel.Time), "%s: %s", f.Name, f.Modified)
					rc, err := f.Open()
					require.NoError(t, err)
					got[f.Name], err = io.ReadAll(rc)
					require.NoError(t, err)
					rc.Close()
				}
			} else {
				require.True(t, strings.HasSuffix(b.Archive, ".tar.gz"), b.Archive)
				zr, err := gzip.NewReader(bytes.NewReader(data))
				require.NoError(t, err)
				assert.True(t, zr.ModTime.IsZero(), "no time in the gzip header")
				tr := tar.NewReader(zr)
				for {
					h, err := tr.Next()
					if err == io.EOF {
						break
					}
					require.NoError(t, err)
					assert.Equal(t, byte(tar.TypeReg), h.Typeflag, h.Name)
					assert.True(t, h.ModTime.Equal(rel.Time), "%s: %s", h.Name, h.ModTime)
					assert.Zero(t, h.Uid, h.Name)
					assert.Zero(t, h.Gid, h.Name)
					if h.Name == b.Exe() {
						assert.Equal(t, int64(0o755), h.Mode)
					} else {
						assert.Equal(t, int64(0o644), h.Mode, h.Name)
					}
					got[h.Name], err = io.ReadAll(tr)
					require.NoError(t, err)
				}
			}
			require.ElementsMatch(t, keys(want), keys(got))
			for name := range want {
				assert.True(t, bytes.Equal(want[name], got[name]), "%s differs", name)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestChecksums: checksums.txt is sha256sum's format, sorted, and lists
// every archive, SBOM and image tarball with its digest.
func TestChecksums(t *testing.T) {
	line := regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(readOut(t, "checksums.txt")))
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		require.NotNil(t, m, "line %q", sc.Text())
		sum, err := fileSHA256(filepath.Join(relOut, m[2]))
		require.NoError(t, err)
		assert.Equal(t, sum, m[1], m[2])
		names = append(names, m[2])
	}
	assert.True(t, sort.StringsAreSorted(names), "sorted: %v", names)
	var want []string
	for _, b := range rel.Binaries {
		want = append(want, b.Archive, b.SBOM)
	}
	want = append(want, fmt.Sprintf("aiconform_%s_image_linux_amd64.tar", strings.TrimPrefix(rel.Version, "v")))
	assert.ElementsMatch(t, want, names)
	assert.ElementsMatch(t, want, rel.Checksummed)
}

// TestSBOM: a CycloneDX document per binary, of the aiconform module at the
// release's version, listing the modules the binary was built from, the
// same for the same binary (no timestamp, a serial number from its digest).
func TestSBOM(t *testing.T) {
	for _, b := range rel.Binaries {
		var bom struct {
			BOMFormat    string `json:"bomFormat"`
			SpecVersion  string `json:"specVersion"`
			SerialNumber string `json:"serialNumber"`
			Metadata     struct {
				Timestamp string `json:"timestamp"`
				Component struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"component"`
			} `json:"metadata"`
			Components []struct {
				Name    string `json:"name"`
				Version string `json:"version"`
				PURL    string `json:"purl"`
			} `json:"components"`
		}
		require.NoError(t, json.Unmarshal(readOut(t, b.SBOM), &bom), b.SBOM)
		assert.Equal(t, "CycloneDX", bom.BOMFormat)
		assert.Equal(t, "1.6", bom.SpecVersion)
		sum, err := fileSHA256(filepath.Join(relOut, b.Path))
		require.NoError(t, err)
		assert.Equal(t, "urn:uuid:"+serialOf(sum), bom.SerialNumber)
		assert.Empty(t, bom.Metadata.Timestamp)
		assert.Equal(t, "github.com/aiconform/aiconform", bom.Metadata.Component.Name)
		assert.Equal(t, rel.Version, bom.Metadata.Component.Version)
		versions := map[string]string{}
		for _, c := range bom.Components {
			versions[c.Name] = c.Version
		}
		assert.Equal(t, "v0.37.2", versions["k8s.io/client-go"], b.SBOM)
		assert.Contains(t, versions, "std", "the Go standard library: %s", b.SBOM)
	}
}

func TestSerialIsUUID(t *testing.T) {
	s := serialOf(strings.Repeat("ab", 32))
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, s)
}

// TestImage: the layout holds one multi-arch index of the linux platforms;
// each image runs the static binary as a user that is not root, holds that
// binary and nothing else (no shell), and carries the OCI labels, dated at
// the commit.
func TestImage(t *testing.T) {
	p, err := layout.FromPath(filepath.Join(relOut, ImageDir))
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	tm, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, tm.Manifests, 1)
	desc := tm.Manifests[0]
	assert.Equal(t, types.OCIImageIndex, desc.MediaType)
	assert.Equal(t, rel.Version, desc.Annotations["org.opencontainers.image.ref.name"])
	assert.Equal(t, "ghcr.io/aiconform/aiconform:"+rel.Version, desc.Annotations["io.containerd.image.name"])
	assert.Equal(t, rel.ImageDigest, desc.Digest.String())

	idx, err := top.ImageIndex(desc.Digest)
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	assert.Equal(t, types.OCIImageIndex, im.MediaType)
	assert.Equal(t, imageLabels(rel), im.Annotations)
	var platforms []string
	for _, d := range im.Manifests {
		require.NotNil(t, d.Platform)
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		assert.Equal(t, types.OCIManifestSchema1, d.MediaType)
		img, err := idx.Image(d.Digest)
		require.NoError(t, err)
		checkImage(t, img, binaryOf(t, d.Platform.OS, d.Platform.Architecture))
	}
	assert.Equal(t, []string{"linux/amd64", "linux/arm64"}, platforms)
}

// TestImageTarball: the docker-archive of linux/amd64 is the same image as
// the index's, under the image's name.
func TestImageTarball(t *testing.T) {
	name := fmt.Sprintf("aiconform_%s_image_linux_amd64.tar", strings.TrimPrefix(rel.Version, "v"))
	tag := "ghcr.io/aiconform/aiconform:" + rel.Version
	img, err := tarball.ImageFromPath(filepath.Join(relOut, name), nil)
	require.NoError(t, err)
	checkImage(t, img, binaryOf(t, "linux", "amd64"))

	// manifest.json names it.
	f, err := os.Open(filepath.Join(relOut, name))
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		require.NoError(t, err, "no manifest.json")
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		require.NoError(t, json.NewDecoder(tr).Decode(&m))
		require.Len(t, m, 1)
		assert.Equal(t, []string{tag}, m[0].RepoTags)
		break
	}
}

func checkImage(t *testing.T, img v1.Image, b Binary) {
	t.Helper()
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, b.Arch, cf.Architecture)
	assert.Equal(t, []string{"/aiconform"}, cf.Config.Entrypoint)
	assert.Empty(t, cf.Config.Cmd)
	assert.Equal(t, "65532:65532", cf.Config.User)
	uid, _, _ := strings.Cut(cf.Config.User, ":")
	assert.NotContains(t, []string{"", "0", "root"}, uid, "not root")
	assert.Empty(t, cf.Config.Env)
	assert.Empty(t, cf.Config.WorkingDir)
	assert.Empty(t, cf.Config.ExposedPorts)
	assert.Equal(t, map[string]string{
		"org.opencontainers.image.source":   "https://github.com/aiconform/aiconform",
		"org.opencontainers.image.revision": rel.Commit,
		"org.opencontainers.image.version":  rel.Version,
		"org.opencontainers.image.created":  rel.Time.Format(time.RFC3339),
	}, cf.Config.Labels)
	assert.True(t, cf.Created.Time.Equal(rel.Time), "created %s, the commit's %s", cf.Created.Time, rel.Time)
	for _, h := range cf.History {
		assert.True(t, h.Created.Time.Equal(rel.Time), "history created %s", h.Created.Time)
	}

	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1, "FROM scratch, one layer")
	mt, err := layers[0].MediaType()
	require.NoError(t, err)
	assert.Contains(t, []types.MediaType{types.OCILayer, types.DockerLayer}, mt)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		assert.Equal(t, byte(tar.TypeReg), h.Typeflag, "%s: a regular file, no link, no folder", h.Name)
		assert.Equal(t, int64(0o755), h.Mode, h.Name)
		assert.Zero(t, h.Uid, "%s: owned by root, not writable by the image's user", h.Name)
		assert.True(t, h.ModTime.Equal(rel.Time), "%s: %s", h.Name, h.ModTime)
		files[h.Name], err = io.ReadAll(tr)
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"aiconform"}, keys(files), "the binary alone")
	assert.NotContains(t, files, "bin/sh")
	assert.True(t, bytes.Equal(readOut(t, b.Path), files["aiconform"]), "the release's linux/%s binary", b.Arch)
}

// TestKrewManifest: the manifest is krew's type, passes krew's own
// validation, names each archive by its release URL and digest, and
// krew installs it from the local archive: the binary then answers as
// `kubectl aiconform`.
func TestKrewManifest(t *testing.T) {
	path := filepath.Join(relOut, KrewManifest)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var p index.Plugin
	require.NoError(t, yaml.UnmarshalStrict(data, &p))
	assert.Equal(t, "krew.googlecontainertools.github.com/v1alpha2", p.APIVersion)
	assert.Equal(t, "Plugin", p.Kind)
	assert.Equal(t, "aiconform", p.Name)
	assert.Equal(t, rel.Version, p.Spec.Version)
	require.NoError(t, ValidateKrewManifest(context.Background(), ".", path))

	sums := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(readOut(t, "checksums.txt"))), "\n") {
		sum, name, _ := strings.Cut(l, "  ")
		sums[name] = sum
	}
	require.Len(t, p.Spec.Platforms, len(rel.Binaries))
	for i, b := range rel.Binaries {
		pl := p.Spec.Platforms[i]
		assert.Equal(t, map[string]string{"os": b.OS, "arch": b.Arch}, pl.Selector.MatchLabels)
		assert.Equal(t, "https://github.com/aiconform/aiconform/releases/download/"+rel.Version+"/"+b.Archive, pl.URI)
		sum, err := fileSHA256(filepath.Join(relOut, b.Archive))
		require.NoError(t, err)
		assert.Equal(t, sum, pl.Sha256, b.Archive)
		assert.Equal(t, sums[b.Archive], pl.Sha256, "checksums.txt agrees: %s", b.Archive)
		assert.Equal(t, b.Exe(), pl.Bin)
	}

	// Install with krew itself, pinned as a tool, from the local archive.
	if runtime.GOOS != "linux" {
		t.Skip("installs the linux archive")
	}
	b := binaryOf(t, "linux", runtime.GOARCH)
	krewRoot := t.TempDir()
	cmd := exec.Command("go", "tool", "krew", "install", "--manifest="+path, "--archive="+filepath.Join(relOut, b.Archive))
	cmd.Env = append(os.Environ(), "KREW_ROOT="+krewRoot, "KREW_OS=linux", "KREW_ARCH="+runtime.GOARCH, "KREW_NO_UPGRADE_CHECK=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	plugin := filepath.Join(krewRoot, "bin", "kubectl-aiconform")
	out, err = exec.Command(plugin, "check", "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "kubectl aiconform check all | ID... [flags]")
	out, err = exec.Command(plugin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.True(t, strings.HasPrefix(string(out), "aiconform "+rel.Version+"\n"), "%s", out)
}

// TestReproducible: a second build of the same commit and tree gives the
// same bytes: binary, archive, SBOM, image.
func TestReproducible(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dist")
	again, err := Build(context.Background(), Options{Root: "../..", Out: out, Platforms: []string{"linux/amd64"}})
	require.NoError(t, err)
	if again.Version != rel.Version {
		t.Skipf("the commit changed during the test: %s, then %s", rel.Version, again.Version)
	}
	b := binaryOf(t, "linux", "amd64")
	sums := func(name string) (string, string) {
		first, err := fileSHA256(filepath.Join(relOut, name))
		require.NoError(t, err)
		second, err := fileSHA256(filepath.Join(out, name))
		require.NoError(t, err)
		return first, second
	}
	if first, second := sums(b.Path); first != second {
		if rel.Modified {
			// Uncommitted changes: the tree may have been edited in
			// between, and the binary rightly differs.
			t.Skipf("the binary differs and the tree has uncommitted changes")
		}
		t.Fatalf("the binary differs: %s, then %s", first, second)
	}
	for _, name := range []string{b.Archive, b.SBOM, fmt.Sprintf("aiconform_%s_image_linux_amd64.tar", strings.TrimPrefix(rel.Version, "v"))} {
		first, second := sums(name)
		assert.Equal(t, first, second, name)
	}
}

// TestOptions: a bad version or platform is refused before anything is
// built, and an output folder that is not a release's is never emptied.
func TestOptions(t *testing.T) {
	ctx := context.Background()
	_, err := Build(ctx, Options{Root: "../..", Out: t.TempDir(), Version: "1.2"})
	assert.ErrorContains(t, err, "want vMAJOR.MINOR.PATCH")

	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "keep"), nil, 0o644))
	_, err = Build(ctx, Options{Root: "../..", Out: other, Platforms: []string{"linux/amd64"}})
	assert.ErrorContains(t, err, "not replacing it")
	assert.FileExists(t, filepath.Join(other, "keep"))

	_, err = Build(ctx, Options{Root: "../..", Out: filepath.Join(t.TempDir(), "dist"), Platforms: []string{"linux"}})
	assert.ErrorContains(t, err, "want os/arch")

	var log bytes.Buffer
	assert.Equal(t, 2, Main(ctx, []string{"extra"}, &log))
}
