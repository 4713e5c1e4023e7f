package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/krew/pkg/constants"
	"sigs.k8s.io/krew/pkg/index"
	"sigs.k8s.io/yaml"
)

// KrewManifest is the krew plugin manifest under Options.Out. Its file
// name is the plugin's name, as krew requires.
var KrewManifest = filepath.Join("krew", project+constants.ManifestExtension)

// krewPlugin is krew's index.Plugin as a manifest of the krew index is
// written: its metadata is the name alone (index.Plugin's ObjectMeta would
// add creationTimestamp: null).
type krewPlugin struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   krewMeta         `json:"metadata"`
	Spec       index.PluginSpec `json:"spec"`
}

type krewMeta struct {
	Name string `json:"name"`
}

// ReleaseURL is where a release's file is downloaded from: its GitHub
// release, tagged with its version.
func ReleaseURL(version, file string) string {
	return repoURL + "/releases/download/" + version + "/" + file
}

// writeKrewManifest writes the plugin manifest of rel's archives, and
// checks it with krew's own validation (validate-krew-manifest: the
// validation package is internal to krew's module; its command is not).
func writeKrewManifest(ctx context.Context, o Options, rel *Release) error {
	p := krewPlugin{
		APIVersion: constants.CurrentAPIVersion,
		Kind:       constants.PluginKind,
		Metadata:   krewMeta{Name: project},
		Spec: index.PluginSpec{
			Version:          rel.Version,
			Homepage:         repoURL,
			ShortDescription: "Audit a cluster against AI conformance requirements",
			Description: `Runs the checks of Kubernetes AI Conformance (CNCF) against the current
context's cluster and writes the evidence an auditor attaches to a
certification submission: each block a kubectl command, what it prints, and
when. Read-only unless --probe is given.
`,
			Caveats: `aiconform only reads, with the permissions of docs/rbac/aiconform-reader.yaml
of its repository; --probe writes, and needs docs/rbac/aiconform-prober.yaml.
`,
		},
	}
	docs, err := archiveDocs(o.Root)
	if err != nil {
		return err
	}
	for _, b := range rel.Binaries {
		sum, err := fileSHA256(filepath.Join(o.Out, b.Archive))
		if err != nil {
			return err
		}
		files := []index.FileOperation{{From: b.Exe(), To: "."}}
		for _, d := range docs {
			files = append(files, index.FileOperation{From: d.name, To: "."})
		}
		p.Spec.Platforms = append(p.Spec.Platforms, index.Platform{
			URI:      ReleaseURL(rel.Version, b.Archive),
			Sha256:   sum,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": b.OS, "arch": b.Arch}},
			Files:    files,
			// krew links it as kubectl-aiconform, the name under
			// which the binary answers as kubectl's plugin.
			Bin: b.Exe(),
		})
	}
	data, err := yaml.Marshal(p)
	if err != nil {
		return err
	}
	path := filepath.Join(o.Out, KrewManifest)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	return ValidateKrewManifest(ctx, toolDir(o), path)
}

// ValidateKrewManifest runs krew's validate-krew-manifest, pinned as a tool
// in the go.mod of dir, on the manifest at path: krew's structural
// validation (name, apiVersion, kind, semantic version, sha256, selectors)
// and that every platform matches one of krew's, and only one. It does not
// install (that downloads the archives); the tests install from a local
// archive instead.
func ValidateKrewManifest(ctx context.Context, dir, path string) error {
	cmd := exec.CommandContext(ctx, "go", "tool", "validate-krew-manifest", "-manifest", path, "-skip-install")
	cmd.Dir = dir
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("validate-krew-manifest %s: %w\n%s", path, err, log.Bytes())
	}
	return nil
}
