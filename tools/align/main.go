// Command align raises the Kubernetes client libraries of the rig's tool
// modules (tools/*/go.mod) and the main module to one version per
// Kubernetes minor, so that a cold build compiles each of their packages
// once.
//
// The go command caches a compiled package by its whole dependency
// closure: k8s.io/api v0.34.7 built in one module is reused by another
// only if apimachinery, golang.org/x/net and the rest under it are the
// same versions there too. The modules are apart because their k8s.io/*
// minors clash, yet modules of one minor differed by patch releases and
// by the small libraries under client-go, so each compiled its own copy.
// Counted from go list -deps of every rig binary and the main module's
// tests, each package keyed by its closure as the build cache keys it: a
// cold machine compiled 14,057 packages (699 MB of source) before, 11,058
// (500 MB) with the client libraries aligned.
//
// Modules are grouped by the minor of the k8s.io/apimachinery they build
// with. In each group every module of clientLibraries is raised to the
// highest version any member builds with; nothing is lowered, and
// k8s.io/* releases are kept within the group's minor. A member that
// replaces a module with a version of itself has that replace raised.
//
// Usage, from the repository root:
//
//	go run ./tools/align          # rewrite go.mod and go.sum, then say what moved
//	go run ./tools/align -check   # exit 1 and name what differs; write nothing
//
// After tools/kubernetes/replaces.sh or a pin moves, run it until it says
// nothing moved (an upgrade can raise further modules).
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// clientLibraries says whether a module is one of k8s.io/client-go's
// dependencies, the libraries every tool compiles. Frameworks above them
// (controller-runtime, the apiserver library's own dependencies) change
// their APIs between minors and are left to each tool's pin.
func clientLibraries(path string) bool {
	switch path {
	case "golang.org/x/exp", "golang.org/x/mod", "golang.org/x/tools", "golang.org/x/telemetry":
		return false // not under client-go; x/exp keeps no API promise
	}
	for _, p := range []string{"k8s.io/", "golang.org/x/", "go.yaml.in/yaml/", "github.com/go-openapi/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	switch path {
	case "google.golang.org/protobuf",
		"github.com/davecgh/go-spew", "github.com/emicklei/go-restful/v3",
		"github.com/fxamacker/cbor/v2", "github.com/go-logr/logr",
		"github.com/gogo/protobuf", "github.com/google/gnostic-models",
		"github.com/google/gofuzz", "github.com/google/uuid",
		"github.com/josharian/intern", "github.com/json-iterator/go",
		"github.com/mailru/easyjson", "github.com/modern-go/concurrent",
		"github.com/modern-go/reflect2", "github.com/munnerz/goautoneg",
		"github.com/pmezard/go-difflib", "github.com/x448/float16",
		"gopkg.in/evanphx/json-patch.v4", "gopkg.in/inf.v0",
		"sigs.k8s.io/json", "sigs.k8s.io/randfill", "sigs.k8s.io/yaml",
		"sigs.k8s.io/structured-merge-diff/v4", "sigs.k8s.io/structured-merge-diff/v6":
		return true
	}
	return false
}

// member is one module: where its go.mod is and the version of each
// module it builds with (a replace by a version wins over the require).
type member struct {
	dir      string
	versions map[string]string
	replaced map[string]bool
}

func main() {
	check := flag.Bool("check", false, "name the modules that differ within a group and exit 1; write nothing")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "align:", err)
		os.Exit(1)
	}
}

func run(check bool) error {
	dirs, err := filepath.Glob("tools/*/go.mod")
	if err != nil {
		return err
	}
	dirs = append([]string{"go.mod"}, dirs...)
	groups := map[string][]*member{}
	for _, f := range dirs {
		m, err := read(f)
		if err != nil {
			return err
		}
		if minor := staging(m.versions["k8s.io/apimachinery"]); minor != "" {
			groups[minor] = append(groups[minor], m)
		}
	}
	var differ []string
	for _, minor := range slices.Sorted(maps.Keys(groups)) {
		members := groups[minor]
		if len(members) < 2 {
			continue
		}
		highest := map[string]string{}
		for _, m := range members {
			for p, v := range m.versions {
				if !clientLibraries(p) || !sameMinor(p, v, minor) {
					continue
				}
				if h, ok := highest[p]; !ok || semver.Compare(v, h) > 0 {
					highest[p] = v
				}
			}
		}
		for _, m := range members {
			var get, edit []string
			for _, p := range slices.Sorted(maps.Keys(highest)) {
				v, ok := m.versions[p]
				if !ok || v == highest[p] || !sameMinor(p, v, minor) {
					continue
				}
				differ = append(differ, fmt.Sprintf("%s: %s %s, %s elsewhere in v0.%s", m.dir, p, v, highest[p], minor))
				if m.replaced[p] {
					edit = append(edit, fmt.Sprintf("-replace=%s=%s@%s", p, p, highest[p]))
				}
				// Required at the version it is replaced with too, so that
				// go get records the sums the raised replace needs.
				get = append(get, p+"@"+highest[p])
			}
			if check || len(get) == 0 {
				continue
			}
			if len(edit) > 0 {
				if err := gocmd(m.dir, append([]string{"mod", "edit"}, edit...)...); err != nil {
					return err
				}
			}
			if err := gocmd(m.dir, append([]string{"get"}, get...)...); err != nil {
				return err
			}
		}
	}
	for _, d := range differ {
		fmt.Println(d)
	}
	if check && len(differ) > 0 {
		return fmt.Errorf("%d client libraries differ within a Kubernetes minor: run go run ./tools/align", len(differ))
	}
	if !check {
		fmt.Printf("align: %d moved\n", len(differ))
	}
	return nil
}

func read(file string) (*member, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(file, data, nil)
	if err != nil {
		return nil, err
	}
	m := &member{dir: filepath.Dir(file), versions: map[string]string{}, replaced: map[string]bool{}}
	for _, r := range f.Require {
		m.versions[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if r.Old.Version == "" && r.New.Path == r.Old.Path && r.New.Version != "" {
			m.versions[r.Old.Path] = r.New.Version
			m.replaced[r.Old.Path] = true
		}
	}
	return m, nil
}

// staging gives the minor of a k8s.io staging release (v0.37.2 -> "37").
func staging(v string) string {
	if !strings.HasPrefix(v, "v0.") {
		return ""
	}
	return strings.TrimPrefix(semver.MajorMinor(v), "v0.")
}

// sameMinor keeps k8s.io/* releases (v0.N.x staging, v1.N.x kubernetes)
// to the group's minor: a module that names a later one only in its
// module graph (scheduler-plugins does) must not move the others.
func sameMinor(path, v, minor string) bool {
	if !strings.HasPrefix(path, "k8s.io/") || strings.HasPrefix(v, "v0.0.0-") {
		return true
	}
	mm := semver.MajorMinor(v)
	return mm == "v0."+minor || mm == "v1."+minor || !strings.HasPrefix(v, "v0.") && !strings.HasPrefix(v, "v1.")
}

func gocmd(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: go %s: %w", dir, strings.Join(args, " "), err)
	}
	return nil
}
