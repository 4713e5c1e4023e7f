package submission

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Categories are the keys of a PRODUCT.yaml's spec, in the templates' order.
var Categories = []string{"accelerators", "networking", "schedulingOrchestration", "observability", "security", "operator"}

// Levels of a checklist requirement, spelled as the templates spell them.
const (
	LevelMust   = "MUST"
	LevelShould = "SHOULD"
)

// ChecklistItem is one requirement of one checklist version.
type ChecklistItem struct {
	ID       string
	Category string
	// Title is aiconform's own short name, not the checklist's description.
	Title string
	Level string
	// Conditional is true where the checklist makes the MUST depend on the
	// platform having the feature at all (an autoscaler, HPA support): its
	// description opens with the condition, which build quotes where it
	// does not hold.
	Conditional bool
	// Aiconform lists the aiconform requirements whose verdict is evidence
	// for this item; empty when aiconform cannot judge it yet.
	Aiconform []string
}

// Checklist is the set of requirements of one CNCF AI Conformance version.
type Checklist struct {
	// Version is "MAJOR.MINOR", as in AIConformance-1.36.yaml.
	Version string
	// ConformanceURLRequired is true from 1.35: metadata.k8sConformanceUrl
	// must link the platform's Kubernetes conformance submission, even in
	// the templates that leave the key out.
	ConformanceURLRequired bool
	// FileEvidence is true from 1.37, the first version whose validator
	// accepts file://path#TestName evidence.
	FileEvidence bool
	Items        []ChecklistItem
}

// Item returns the requirement with the id, if the checklist has it.
func (c Checklist) Item(id string) (ChecklistItem, bool) {
	for _, it := range c.Items {
		if it.ID == id {
			return it, true
		}
	}
	return ChecklistItem{}, false
}

//go:embed checklists.yaml
var checklistsYAML []byte

type checklistsFile struct {
	Versions []struct {
		Version                string `yaml:"version"`
		ConformanceURLRequired bool   `yaml:"conformanceURLRequired"`
		FileEvidence           bool   `yaml:"fileEvidence"`
	} `yaml:"versions"`
	Requirements []struct {
		ID            string            `yaml:"id"`
		Category      string            `yaml:"category"`
		Title         string            `yaml:"title"`
		Levels        map[string]string `yaml:"levels"`
		ConditionalIn []string          `yaml:"conditionalIn"`
		Aiconform     []string          `yaml:"aiconform"`
	} `yaml:"requirements"`
}

// Checklists returns the checklist of every known version, oldest first.
// It parses the embedded data on every call: callers are few and a fresh
// copy cannot be mutated behind another caller's back.
func Checklists() ([]Checklist, error) {
	var f checklistsFile
	dec := yaml.NewDecoder(bytes.NewReader(checklistsYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("checklists.yaml: %w", err)
	}
	var out []Checklist
	for _, v := range f.Versions {
		c := Checklist{Version: v.Version, ConformanceURLRequired: v.ConformanceURLRequired, FileEvidence: v.FileEvidence}
		for _, r := range f.Requirements {
			level, ok := r.Levels[v.Version]
			if !ok {
				continue
			}
			if level != LevelMust && level != LevelShould {
				return nil, fmt.Errorf("checklists.yaml: %s in %s: level %q is neither MUST nor SHOULD", r.ID, v.Version, level)
			}
			// Only a MUST needs the mark: build and lint treat a
			// conditional MUST apart, a SHOULD never.
			if contains(r.ConditionalIn, v.Version) && level != LevelMust {
				return nil, fmt.Errorf("checklists.yaml: %s in %s: conditionalIn names a %s, not a MUST", r.ID, v.Version, level)
			}
			c.Items = append(c.Items, ChecklistItem{
				ID: r.ID, Category: r.Category, Title: r.Title, Level: level,
				Conditional: contains(r.ConditionalIn, v.Version),
				Aiconform:   r.Aiconform,
			})
		}
		out = append(out, c)
	}
	return out, nil
}

// ChecklistFor returns the checklist of a Kubernetes version as a submission
// writes it: "v1.36", "1.36" and "v1.35.3" all name checklist 1.36 or 1.35.
func ChecklistFor(kubernetesVersion string) (Checklist, error) {
	v, err := MinorVersion(kubernetesVersion)
	if err != nil {
		return Checklist{}, err
	}
	all, err := Checklists()
	if err != nil {
		return Checklist{}, err
	}
	for _, c := range all {
		if c.Version == v {
			return c, nil
		}
	}
	return Checklist{}, fmt.Errorf("no checklist for Kubernetes %s: aiconform knows 1.33 to 1.37", v)
}

var versionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)(\.\d+)?([-+].*)?$`)

// MinorVersion reduces a Kubernetes version to the "MAJOR.MINOR" that names
// a checklist: submissions write "v1.36" but also "v1.35.3".
func MinorVersion(kubernetesVersion string) (string, error) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(kubernetesVersion))
	if m == nil {
		return "", fmt.Errorf("kubernetesVersion %q is not a version like v1.36", kubernetesVersion)
	}
	return m[1] + "." + m[2], nil
}

// versionAtLeast compares "MAJOR.MINOR" versions numerically, so that a
// future 1.100 sorts after 1.37.
func versionAtLeast(v, min string) bool {
	vMaj, vMin := splitVersion(v)
	mMaj, mMin := splitVersion(min)
	return vMaj > mMaj || (vMaj == mMaj && vMin >= mMin)
}

func splitVersion(v string) (int, int) {
	major, minor, _ := strings.Cut(v, ".")
	a, _ := strconv.Atoi(major)
	b, _ := strconv.Atoi(minor)
	return a, b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
