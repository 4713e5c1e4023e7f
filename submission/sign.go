package submission

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Sign writes dir/SHA256SUMS, the manifest of every regular file of dir, and
// dir/SHA256SUMS.sig, the ed25519 signature of the manifest's bytes in base64
// on one line. The signature is detached so that the manifest stays exactly
// what `sha256sum -c` reads. An earlier manifest and signature are replaced.
func Sign(dir string, key ed25519.PrivateKey) (*Manifest, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("not an ed25519 private key")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// A crash of an earlier sign may have left its temporary files; they are
	// ours by name, and hashing them would list a file that writeFile then
	// renames away.
	for _, name := range []string{ManifestName + tmpSuffix, SignatureName + tmpSuffix} {
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	m, err := scan(root)
	if err != nil {
		return nil, err
	}
	data := m.Marshal()
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(key, data)) + "\n"
	// Each file is written whole or not at all. A crash between the two
	// renames leaves a new manifest beside the old signature, which verify
	// rejects: failing closed is the point.
	if err := writeFile(root, ManifestName, data); err != nil {
		return nil, err
	}
	if err := writeFile(root, SignatureName, []byte(sig)); err != nil {
		return nil, err
	}
	return m, nil
}

const tmpSuffix = ".tmp"

func writeFile(root *os.Root, name string, data []byte) error {
	tmp := name + tmpSuffix
	if err := root.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return nil
}

// ProblemKind says what verification found wrong.
type ProblemKind string

// What Verify reports. The values are the words printed before the path.
const (
	// BadSignature: the manifest or its signature is missing, malformed or
	// was not made by the key's owner. Path names the manifest or signature.
	BadSignature ProblemKind = "bad signature"
	// Changed: a listed file's content differs from its digest.
	Changed ProblemKind = "changed"
	// Missing: a listed file is not in the directory.
	Missing ProblemKind = "missing"
	// Added: a file in the directory is not listed.
	Added ProblemKind = "added"
	// NotRegular: a symlink or other non-regular file is in the directory,
	// which sign would have refused.
	NotRegular ProblemKind = "not a regular file"
)

// Problem is one thing wrong with a signed directory.
type Problem struct {
	Kind ProblemKind
	// Path is slash-separated and relative to the directory.
	Path string
	// Detail says more when there is more to say; it may be empty.
	Detail string
}

func (p Problem) String() string {
	if p.Detail == "" {
		return fmt.Sprintf("%s: %s", p.Kind, p.Path)
	}
	return fmt.Sprintf("%s: %s (%s)", p.Kind, p.Path, p.Detail)
}

// Verification is the outcome of Verify.
type Verification struct {
	// Files is how many files the manifest lists.
	Files int
	// Problems is empty when the directory is exactly what was signed.
	Problems []Problem
}

// OK reports whether the directory verified.
func (v *Verification) OK() bool { return len(v.Problems) == 0 }

// Verify checks dir against its manifest and signature: the signature of
// SHA256SUMS under key, then every listed file's digest, then that no file
// was added or removed. Every problem is reported, not only the first, so
// one run says all that is wrong. A bad signature does not stop the file
// comparison: the listed differences are still a useful diagnosis, though
// the verification as a whole has failed. An error means the check could
// not be carried out (dir unreadable), not that it failed.
func Verify(dir string, key ed25519.PublicKey) (*Verification, error) {
	if len(key) != ed25519.PublicKeySize {
		return nil, errors.New("not an ed25519 public key")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	v := &Verification{}
	data, err := readSigned(root, key)
	if err != nil {
		var p *problemError
		if !errors.As(err, &p) {
			return nil, err
		}
		v.Problems = append(v.Problems, p.Problem)
		if data == nil {
			// No manifest to compare the files with.
			return v, nil
		}
	}
	m, err := ParseManifest(data)
	if err != nil {
		v.Problems = append(v.Problems, Problem{Kind: BadSignature, Path: ManifestName, Detail: err.Error()})
		return v, nil
	}
	v.Files = len(m.Entries)
	files, err := walk(root)
	if err != nil {
		return nil, err
	}
	present := make(map[string]file, len(files))
	for _, f := range files {
		present[f.path] = f
	}
	listed := make(map[string]bool, len(m.Entries))
	for _, e := range m.Entries {
		listed[e.Path] = true
		f, ok := present[e.Path]
		switch {
		case !ok:
			v.Problems = append(v.Problems, Problem{Kind: Missing, Path: e.Path})
		case !f.info.Mode().IsRegular():
			v.Problems = append(v.Problems, Problem{Kind: NotRegular, Path: e.Path, Detail: kind(f.info.Mode())})
		default:
			sum, err := hashFile(root, f)
			if err != nil {
				return nil, err
			}
			if sum != e.SHA256 {
				v.Problems = append(v.Problems, Problem{Kind: Changed, Path: e.Path})
			}
		}
	}
	for _, f := range files {
		if listed[f.path] {
			continue
		}
		if !f.info.Mode().IsRegular() {
			v.Problems = append(v.Problems, Problem{Kind: NotRegular, Path: f.path, Detail: kind(f.info.Mode())})
			continue
		}
		v.Problems = append(v.Problems, Problem{Kind: Added, Path: f.path})
	}
	return v, nil
}

// problemError carries a verification finding out of readSigned, apart from
// errors that stop verification.
type problemError struct{ Problem }

func (e *problemError) Error() string { return e.String() }

// readSigned returns the manifest's bytes and checks their signature. With a
// bad signature it returns both the bytes and the problem, so the caller can
// still compare files; without a manifest it returns no bytes.
func readSigned(root *os.Root, key ed25519.PublicKey) ([]byte, error) {
	data, err := readRegular(root, ManifestName)
	if err != nil {
		return nil, err
	}
	sigText, err := readRegular(root, SignatureName)
	if err != nil {
		return data, err
	}
	sig, err := base64.StdEncoding.DecodeString(string(bytes.TrimRight(sigText, "\r\n")))
	if err != nil || len(sig) != ed25519.SignatureSize {
		return data, &problemError{Problem{Kind: BadSignature, Path: SignatureName, Detail: "not a base64 ed25519 signature"}}
	}
	if !ed25519.Verify(key, data, sig) {
		return data, &problemError{Problem{Kind: BadSignature, Path: ManifestName, Detail: "the signature does not match this manifest and key"}}
	}
	return data, nil
}

// readRegular reads a top-level file of root, refusing a symlink: the signed
// bytes must be the directory's own. A file that is not there is a problem
// with the directory, not an error of the run.
func readRegular(root *os.Root, name string) ([]byte, error) {
	info, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &problemError{Problem{Kind: BadSignature, Path: name, Detail: "missing; sign the directory first"}}
	}
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &problemError{Problem{Kind: BadSignature, Path: name, Detail: kind(info.Mode())}}
	}
	return root.ReadFile(name)
}
