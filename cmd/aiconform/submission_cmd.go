package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aiconform/aiconform/submission"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewCmdSubmission builds `aiconform submission`, the parent of the commands
// that make and check a submission directory.
func NewCmdSubmission(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "submission",
		Short: "Make and check a CNCF AI Conformance submission directory",
		// Cobra checks a parent's arguments only when it can run; without
		// this a mistyped subcommand prints help and exits 0.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(
		NewCmdSubmissionSign(streams, nil),
		NewCmdSubmissionVerify(streams, nil),
		NewCmdSubmissionKeygen(streams, nil),
		newCmdSubmissionLint(streams),
		NewCmdSubmissionBuild(streams, nil, nil),
	)
	return cmd
}

// SignOptions holds the flags of `aiconform submission sign`.
type SignOptions struct {
	Dir string
	Key string

	streams genericiooptions.IOStreams
}

// NewCmdSubmissionSign builds `aiconform submission sign`. runF replaces Run
// in tests of flag parsing.
func NewCmdSubmissionSign(streams genericiooptions.IOStreams, runF func(*SignOptions) error) *cobra.Command {
	o := &SignOptions{streams: streams}
	cmd := &cobra.Command{
		Use:   "sign DIR --key ed25519.pem",
		Short: "Write DIR/SHA256SUMS of every file in DIR and its ed25519 signature DIR/SHA256SUMS.sig",
		Long: `sign lists every regular file under DIR with its SHA-256 in DIR/SHA256SUMS (the
format 'sha256sum -c' reads) and writes the detached ed25519 signature of that
file, base64 on one line, to DIR/SHA256SUMS.sig. Symlinks and other non-regular
files are refused. The key is PKCS#8 PEM, as 'openssl genpkey -algorithm
ed25519' or 'aiconform submission keygen' writes it.`,
		Example: `  aiconform submission keygen --out vendor
  aiconform submission sign submission/ --key vendor.pem`,
		Args: exactlyOneDir,
		RunE: func(_ *cobra.Command, args []string) error {
			o.Dir = args[0]
			if o.Key == "" {
				return usageErrorf("--key FILE is required: an ed25519 private key in PEM")
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVar(&o.Key, "key", "", "ed25519 private key, PKCS#8 PEM")
	return cmd
}

// Run signs the directory.
func (o *SignOptions) Run() error {
	key, err := submission.ReadPrivateKey(o.Key)
	if err != nil {
		return usageErrorf("--key: %v", err)
	}
	if pathInside(o.Key, o.Dir) {
		// It would be listed, and shipped with the submission.
		return usageErrorf("--key: %s is inside %s; keep the private key out of the directory you sign", o.Key, o.Dir)
	}
	m, err := submission.Sign(o.Dir, key)
	if err != nil {
		return usageErrorf("sign %s: %v", o.Dir, err)
	}
	_, err = fmt.Fprintf(o.streams.Out, "signed %d files: wrote %s and %s\n", len(m.Entries),
		filepath.Join(o.Dir, submission.ManifestName), filepath.Join(o.Dir, submission.SignatureName))
	return err
}

// VerifyOptions holds the flags of `aiconform submission verify`.
type VerifyOptions struct {
	Dir string
	Key string

	streams genericiooptions.IOStreams
}

// NewCmdSubmissionVerify builds `aiconform submission verify`. runF replaces
// Run in tests of flag parsing.
func NewCmdSubmissionVerify(streams genericiooptions.IOStreams, runF func(*VerifyOptions) error) *cobra.Command {
	o := &VerifyOptions{streams: streams}
	cmd := &cobra.Command{
		Use:   "verify DIR --key pub.pem",
		Short: "Check DIR against its signed SHA256SUMS: exit 1 on any changed, missing or added file",
		Long: `verify checks the signature of DIR/SHA256SUMS with the public key, then every
listed file's SHA-256, then that DIR holds no file the manifest does not list.
Every problem is printed with its path; the exit code is 1 if there is any.
The key is PKIX PEM, as 'openssl pkey -pubout' writes it.`,
		Example: `  aiconform submission verify submission/ --key vendor.pub.pem`,
		Args:    exactlyOneDir,
		RunE: func(_ *cobra.Command, args []string) error {
			o.Dir = args[0]
			if o.Key == "" {
				return usageErrorf("--key FILE is required: an ed25519 public key in PEM")
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVar(&o.Key, "key", "", "ed25519 public key, PKIX PEM")
	return cmd
}

// Run verifies the directory.
func (o *VerifyOptions) Run() error {
	key, err := submission.ReadPublicKey(o.Key)
	if err != nil {
		return usageErrorf("--key: %v", err)
	}
	v, err := submission.Verify(o.Dir, key)
	if err != nil {
		return usageErrorf("verify %s: %v", o.Dir, err)
	}
	for _, p := range v.Problems {
		if _, err := fmt.Fprintln(o.streams.Out, p); err != nil {
			return err
		}
	}
	if !v.OK() {
		// A directory that does not verify is a finding, like an unmet
		// requirement: exit 1, not the usage error's 2.
		return &notMetError{msg: fmt.Sprintf("%s does not verify: %d problem(s)", o.Dir, len(v.Problems))}
	}
	_, err = fmt.Fprintf(o.streams.Out, "verified %d files\n", v.Files)
	return err
}

// KeygenOptions holds the flags of `aiconform submission keygen`.
type KeygenOptions struct {
	Out string

	streams genericiooptions.IOStreams
}

// NewCmdSubmissionKeygen builds `aiconform submission keygen`, for users
// without openssl. runF replaces Run in tests of flag parsing.
func NewCmdSubmissionKeygen(streams genericiooptions.IOStreams, runF func(*KeygenOptions) error) *cobra.Command {
	o := &KeygenOptions{streams: streams}
	cmd := &cobra.Command{
		Use:   "keygen --out PREFIX",
		Short: "Write a new ed25519 key pair to PREFIX.pem (private) and PREFIX.pub.pem (public)",
		Long: `keygen writes the same files as
  openssl genpkey -algorithm ed25519 -out PREFIX.pem
  openssl pkey -in PREFIX.pem -pubout -out PREFIX.pub.pem
It never overwrites a file.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if o.Out == "" {
				return usageErrorf("--out PREFIX is required")
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVar(&o.Out, "out", "", "prefix of the key files: PREFIX.pem and PREFIX.pub.pem")
	return cmd
}

// Run writes the key pair.
func (o *KeygenOptions) Run() error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	privPEM, err := submission.MarshalPrivateKey(priv)
	if err != nil {
		return err
	}
	pubPEM, err := submission.MarshalPublicKey(pub)
	if err != nil {
		return err
	}
	privPath, pubPath := o.Out+".pem", o.Out+".pub.pem"
	if err := writeNewFile(privPath, privPEM, 0o600); err != nil {
		return usageErrorf("--out: %v", err)
	}
	if err := writeNewFile(pubPath, pubPEM, 0o644); err != nil {
		// Half a pair is no use; take back the private key we just wrote.
		_ = os.Remove(privPath)
		return usageErrorf("--out: %v", err)
	}
	_, err = fmt.Fprintf(o.streams.Out, "wrote %s (private: keep it secret) and %s (public: publish it)\n", privPath, pubPath)
	return err
}

// writeNewFile creates path, refusing to replace a file: overwriting a private
// key loses the only means to sign for the public key already published.
func writeNewFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(path)
		return err
	}
	return nil
}

// pathInside reports whether path is dir or under it, after resolving symlinks;
// when either cannot be resolved, sign itself reports the problem.
func pathInside(path, dir string) bool {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	if p, err = filepath.Abs(p); err != nil {
		return false
	}
	if d, err = filepath.Abs(d); err != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && filepath.IsLocal(rel)
}

func exactlyOneDir(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf("name one directory (got %d arguments)", len(args))
	}
	return nil
}
