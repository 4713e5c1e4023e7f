// Package submission holds what makes a submission directory; for now its
// integrity: a SHA-256 manifest and an ed25519 signature.
package submission

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// The manifest and its signature live at the top of the directory they
// cover, under fixed names so that `sha256sum -c SHA256SUMS` run inside the
// directory finds every file.
const (
	ManifestName  = "SHA256SUMS"
	SignatureName = "SHA256SUMS.sig"
)

// Entry is one line of a manifest: a regular file and its SHA-256.
type Entry struct {
	// Path is slash-separated and relative to the directory, whatever the OS.
	Path   string
	SHA256 [sha256.Size]byte
}

// Manifest is the list of every regular file of a directory, sorted by Path.
type Manifest struct {
	Entries []Entry
}

// Marshal renders the manifest in the format `sha256sum -c` reads: lowercase
// hex digest, two spaces (text mode), the path, a newline.
func (m *Manifest) Marshal() []byte {
	var b bytes.Buffer
	for _, e := range m.Entries {
		b.WriteString(hex.EncodeToString(e.SHA256[:]))
		b.WriteString("  ")
		b.WriteString(e.Path)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ParseManifest reads what Marshal writes, and nothing looser: the bytes are
// what the signature covers, so a second accepted spelling would only be a
// second thing to get wrong.
func ParseManifest(data []byte) (*Manifest, error) {
	m := &Manifest{}
	if len(data) == 0 {
		return m, nil
	}
	if data[len(data)-1] != '\n' {
		return nil, errors.New("the last line does not end in a newline")
	}
	seen := map[string]bool{}
	lines := strings.Split(string(data[:len(data)-1]), "\n")
	for i, line := range lines {
		n := i + 1
		digest, path, ok := strings.Cut(line, "  ")
		if !ok || len(digest) != 2*sha256.Size || strings.ToLower(digest) != digest {
			return nil, fmt.Errorf("line %d: want 64 lowercase hex digits, two spaces and a path", n)
		}
		var e Entry
		if _, err := hex.Decode(e.SHA256[:], []byte(digest)); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if err := checkPath(path); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if seen[path] {
			return nil, fmt.Errorf("line %d: %q is listed twice", n, path)
		}
		if len(m.Entries) > 0 && path < m.Entries[len(m.Entries)-1].Path {
			return nil, fmt.Errorf("line %d: %q is out of order", n, path)
		}
		seen[path] = true
		e.Path = path
		m.Entries = append(m.Entries, e)
	}
	return m, nil
}

// checkPath refuses a path that could leave the directory or that the
// manifest format cannot carry without escaping. GNU sha256sum escapes
// backslashes and newlines with a leading backslash; refusing them keeps
// every line plain and the parser small.
func checkPath(path string) error {
	if !fs.ValidPath(path) || path == "." {
		return fmt.Errorf("%q is not a path inside the directory", path)
	}
	if strings.ContainsAny(path, "\\\n\r") {
		return fmt.Errorf("%q: names with a backslash or a line break cannot be listed", path)
	}
	if path == ManifestName || path == SignatureName {
		return fmt.Errorf("%q: the manifest cannot list itself or its signature", path)
	}
	return nil
}

// file is a directory entry found by walk.
type file struct {
	path string
	info fs.FileInfo // from lstat: a symlink is a symlink here
}

// walk lists every entry of root except directories and the top-level
// manifest and signature, sorted by path. Symlinks and other non-regular
// files are listed too, so that callers decide how to refuse them.
func walk(root *os.Root) ([]file, error) {
	var files []file
	err := fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || path == ManifestName || path == SignatureName {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, file{path: path, info: info})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// WalkDir visits in lexical order per directory, which is not the byte
	// order of whole paths ("a/b" vs "a-b"); sort so the manifest is.
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files, nil
}

// hashFile returns the SHA-256 of a regular file found by walk. The open
// handle must be the file walk saw: a file swapped for a symlink in between
// would otherwise be hashed through the link.
func hashFile(root *os.Root, f file) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	r, err := root.Open(f.path)
	if err != nil {
		return sum, err
	}
	defer r.Close()
	info, err := r.Stat()
	if err != nil {
		return sum, err
	}
	if !info.Mode().IsRegular() || !os.SameFile(info, f.info) {
		return sum, fmt.Errorf("%s: changed while being read", f.path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return sum, fmt.Errorf("%s: %w", f.path, err)
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// kind names a non-regular file in messages.
func kind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSymlink != 0:
		return "a symlink"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	default:
		return "not a regular file"
	}
}

// Scan builds the manifest of dir. It refuses symlinks and other non-regular
// files rather than skip them: a signed directory that silently leaves out
// part of its content would prove less than it seems to.
func Scan(dir string) (*Manifest, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return scan(root)
}

func scan(root *os.Root) (*Manifest, error) {
	files, err := walk(root)
	if err != nil {
		return nil, err
	}
	m := &Manifest{}
	for _, f := range files {
		if !f.info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is %s; only regular files can be signed", f.path, kind(f.info.Mode()))
		}
		if err := checkPath(f.path); err != nil {
			return nil, err
		}
		sum, err := hashFile(root, f)
		if err != nil {
			return nil, err
		}
		m.Entries = append(m.Entries, Entry{Path: f.path, SHA256: sum})
	}
	return m, nil
}
