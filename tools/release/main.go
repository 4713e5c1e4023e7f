// Command release builds a snapshot release of aiconform into dist/:
// the binaries of every platform, their archives, an SBOM per binary,
// checksums.txt, the multi-arch OCI image and the krew plugin manifest.
// It is what `make release-snapshot` runs, in place of goreleaser.
//
// Everything in it is reproducible: the same commit and tree give the same
// bytes. Times come from the commit (archive entries, the image's created),
// never from the clock; the binaries are built with -trimpath and no cgo,
// and the version is stamped through main.version, which `aiconform
// version` prints.
//
// Usage (from the repository root):
//
//	cd tools/release && go run . -root ../.. -out ../../dist
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := Main(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// Main parses the flags, builds the release and returns the exit code.
func Main(ctx context.Context, args []string, log io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(log)
	var o Options
	var platforms string
	fs.StringVar(&o.Root, "root", "../..", "the repository root (the aiconform module)")
	fs.StringVar(&o.Out, "out", "", "the output folder; its content is replaced (default: ROOT/dist)")
	fs.StringVar(&platforms, "platforms", strings.Join(DefaultPlatforms, ","), "the platforms to build, os/arch,...; the image has their linux ones")
	fs.StringVar(&o.Version, "version", "", "the release's version, vX.Y.Z (default: a snapshot's, v0.0.0-SNAPSHOT-<commit>)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(log, "release: unexpected arguments: %q\n", fs.Args())
		return 2
	}
	if o.Out == "" {
		o.Out = filepath.Join(o.Root, "dist")
	}
	o.Platforms = strings.Split(platforms, ",")
	o.Log = log
	start := time.Now()
	rel, err := Build(ctx, o)
	if err != nil {
		fmt.Fprintf(log, "release: %v\n", err)
		return 1
	}
	fmt.Fprintf(log, "release: %s in %s (%s)\n", rel.Version, o.Out, time.Since(start).Round(time.Second))
	return 0
}
