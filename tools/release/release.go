package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultPlatforms are the platforms a release has binaries for.
var DefaultPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}

const (
	// project is the binary's name, the archives' prefix and the krew
	// plugin's name (kubectl runs kubectl-aiconform for `kubectl aiconform`).
	project = "aiconform"
	// repoURL is where the sources and the releases' archives are.
	repoURL = "https://github.com/aiconform/aiconform"
	// imageRepo is where the release image is to be published.
	imageRepo = "ghcr.io/aiconform/aiconform"
)

// Options is what one run builds.
type Options struct {
	Root      string   // the repository root: the aiconform module and its git checkout
	Out       string   // the output folder, replaced
	Platforms []string // os/arch
	Version   string   // vX.Y.Z; empty: a snapshot's
	Log       io.Writer
}

// Release is what a run built, under Options.Out.
type Release struct {
	Version  string
	Commit   string
	Time     time.Time // the commit's, every timestamp of the release
	Modified bool      // the tree had uncommitted changes
	Binaries []Binary
	// Checksummed are the files checksums.txt lists, relative to Out.
	Checksummed []string
	// ImageDigest is the multi-arch index's digest ("" without a linux
	// platform).
	ImageDigest string
}

// Binary is one platform's build and the files made from it, relative to
// Options.Out.
type Binary struct {
	OS, Arch string
	Path     string // the binary
	Archive  string // tar.gz, or zip for windows
	SBOM     string // CycloneDX JSON
}

// Exe is the binary's file name on its platform.
func (b Binary) Exe() string {
	if b.OS == "windows" {
		return project + ".exe"
	}
	return project
}

var releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// Build builds the release into o.Out.
func Build(ctx context.Context, o Options) (*Release, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	o.Root = root
	if o.Out, err = filepath.Abs(o.Out); err != nil {
		return nil, err
	}
	rel, err := gitState(ctx, root)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Version == "":
		// A snapshot says so, and which commit; a modified tree too.
		rel.Version = "v0.0.0-SNAPSHOT-" + rel.Commit[:12]
		if rel.Modified {
			rel.Version += "-dirty"
		}
	case !releaseVersion.MatchString(o.Version):
		return nil, fmt.Errorf("-version %q: want vMAJOR.MINOR.PATCH[-PRERELEASE]", o.Version)
	case rel.Modified:
		return nil, fmt.Errorf("-version %s: the tree has uncommitted changes; a release is built from its commit alone", o.Version)
	default:
		rel.Version = o.Version
	}
	if err := resetOut(o.Out); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "release: %s, commit %s of %s\n", rel.Version, rel.Commit, rel.Time.Format(time.RFC3339))

	for _, p := range o.Platforms {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || goos == "" || goarch == "" {
			return nil, fmt.Errorf("platform %q: want os/arch", p)
		}
		b := Binary{OS: goos, Arch: goarch}
		b.Path = filepath.Join("build", goos+"_"+goarch, b.Exe())
		base := fmt.Sprintf("%s_%s_%s_%s", project, strings.TrimPrefix(rel.Version, "v"), goos, goarch)
		b.Archive = base + ".tar.gz"
		if goos == "windows" {
			b.Archive = base + ".zip"
		}
		b.SBOM = base + ".sbom.json"
		fmt.Fprintf(o.Log, "release: build %s/%s\n", goos, goarch)
		if err := goBuild(ctx, o, rel, b); err != nil {
			return nil, err
		}
		rel.Binaries = append(rel.Binaries, b)
	}
	docs, err := archiveDocs(root)
	if err != nil {
		return nil, err
	}
	for _, b := range rel.Binaries {
		if err := writeArchive(o.Out, b, docs, rel.Time); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "release: sbom %s\n", b.SBOM)
		if err := writeSBOM(ctx, o, rel, b); err != nil {
			return nil, err
		}
		rel.Checksummed = append(rel.Checksummed, b.Archive, b.SBOM)
	}
	fmt.Fprintf(o.Log, "release: image\n")
	imageTar, err := writeImages(o.Out, rel)
	if err != nil {
		return nil, err
	}
	if imageTar != "" {
		rel.Checksummed = append(rel.Checksummed, imageTar)
	}
	if err := writeChecksums(o.Out, rel.Checksummed); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "release: krew manifest\n")
	if err := writeKrewManifest(ctx, o, rel); err != nil {
		return nil, err
	}
	return rel, nil
}

// gitState is the commit the tree is at, its time, and whether the tree
// has changes: what `go build -buildvcs` stamps (vcs.revision, vcs.time,
// vcs.modified), read the way the go command reads it.
func gitState(ctx context.Context, root string) (*Release, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
		// Read only: no refresh of the index's stat cache.
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	commit, err := git("rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	if len(commit) < 12 {
		return nil, fmt.Errorf("git rev-parse HEAD: %q is not a commit", commit)
	}
	ct, err := git("log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return nil, err
	}
	secs, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("commit time %q: %w", ct, err)
	}
	status, err := git("status", "--porcelain")
	if err != nil {
		return nil, err
	}
	return &Release{Commit: commit, Time: time.Unix(secs, 0).UTC(), Modified: status != ""}, nil
}

// resetOut empties the output folder. It refuses a folder that holds
// something else than a release, so that a wrong -out deletes nothing.
func resetOut(out string) error {
	entries, err := os.ReadDir(out)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(entries) > 0 && filepath.Base(out) != "dist":
		if _, err := os.Stat(filepath.Join(out, "checksums.txt")); err != nil {
			return fmt.Errorf("%s holds files and no release's checksums.txt: not replacing it", out)
		}
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return os.MkdirAll(out, 0o755)
}

// goBuild builds b's binary: static, without the paths of this machine,
// with the version aiconform version prints, and the same bytes for the
// same commit and tree whatever the caller's environment says.
func goBuild(ctx context.Context, o Options, rel *Release, b Binary) error {
	out := filepath.Join(o.Out, b.Path)
	cmd := exec.CommandContext(ctx, "go", "build",
		"-trimpath",
		// The commit, its time and whether the tree was modified, which
		// `aiconform version` prints (-buildvcs=false in GOFLAGS would
		// drop them; outside a git checkout there is nothing to stamp).
		"-buildvcs=auto",
		"-ldflags", "-s -w -X main.version="+rel.Version,
		"-o", out, "./cmd/"+project)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+b.OS, "GOARCH="+b.Arch,
		// The defaults, whatever the environment says: the flags are
		// the command line's, the instruction sets the baseline.
		"GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0")
	cmd.Stdout, cmd.Stderr = o.Log, o.Log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s/%s: %w", b.OS, b.Arch, err)
	}
	return nil
}

// archiveFile is a file of every archive beside the binary.
type archiveFile struct {
	name string
	data []byte
}

// archiveDocs are the repository's README.md and, when there is one,
// LICENSE.
func archiveDocs(root string) ([]archiveFile, error) {
	var docs []archiveFile
	for _, name := range []string{"LICENSE", "README.md"} {
		data, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, os.ErrNotExist) && name == "LICENSE" {
			continue
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, archiveFile{name, data})
	}
	return docs, nil
}

// writeArchive writes b's archive: the binary and docs at its root, owned
// by root, dated at the commit.
func writeArchive(out string, b Binary, docs []archiveFile, mtime time.Time) error {
	bin, err := os.ReadFile(filepath.Join(out, b.Path))
	if err != nil {
		return err
	}
	files := append([]archiveFile{{b.Exe(), bin}}, docs...)
	mode := func(name string) int64 {
		if name == b.Exe() {
			return 0o755
		}
		return 0o644
	}
	var buf bytes.Buffer
	if b.OS == "windows" {
		zw := zip.NewWriter(&buf)
		zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
			return flate.NewWriter(w, flate.BestCompression)
		})
		for _, f := range files {
			h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: mtime}
			h.SetMode(os.FileMode(mode(f.name)))
			w, err := zw.CreateHeader(h)
			if err != nil {
				return err
			}
			if _, err := w.Write(f.data); err != nil {
				return err
			}
		}
		if err := zw.Close(); err != nil {
			return err
		}
	} else {
		// No name and no time in the gzip header.
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			return err
		}
		tw := tar.NewWriter(zw)
		for _, f := range files {
			h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: mode(f.name), Size: int64(len(f.data)), ModTime: mtime}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := tw.Write(f.data); err != nil {
				return err
			}
		}
		if err := tw.Close(); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(out, b.Archive), buf.Bytes(), 0o644)
}

// writeSBOM writes b's SBOM with cyclonedx-gomod, pinned in this module's
// go.mod as a tool: the modules the binary was built from, as its build
// info records them, and the Go standard library. Its serial number is
// derived from the binary's digest and it has no timestamp, so that the
// same binary gives the same SBOM.
func writeSBOM(ctx context.Context, o Options, rel *Release, b Binary) error {
	sum, err := fileSHA256(filepath.Join(o.Out, b.Path))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "tool", "cyclonedx-gomod", "bin",
		"-json", "-std", "-notimestamp", "-serial", serialOf(sum),
		"-version", rel.Version,
		"-output", filepath.Join(o.Out, b.SBOM),
		filepath.Join(o.Out, b.Path))
	cmd.Dir = toolDir(o)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cyclonedx-gomod bin %s: %w\n%s", b.Path, err, log.Bytes())
	}
	return nil
}

// toolDir is this module's folder, whose go.mod pins the tools it runs.
func toolDir(o Options) string { return filepath.Join(o.Root, "tools", "release") }

// serialOf is a UUID (version 8: custom) made of a digest's first bytes.
func serialOf(sum string) string {
	b, _ := hex.DecodeString(sum[:32])
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeChecksums writes checksums.txt as sha256sum prints it: the digest,
// two spaces, the name; sorted by name.
func writeChecksums(out string, names []string) error {
	names = append([]string(nil), names...)
	sort.Strings(names)
	var buf bytes.Buffer
	for _, n := range names {
		sum, err := fileSHA256(filepath.Join(out, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "%s  %s\n", sum, n)
	}
	return os.WriteFile(filepath.Join(out, "checksums.txt"), buf.Bytes(), 0o644)
}
