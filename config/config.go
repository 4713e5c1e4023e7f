// Package config reads aiconform.yaml, the file in which a pipeline keeps
// its choices (what runs, the failing level, probe settings, redaction,
// requirements skipped with a reason, the user's own checks and plugins)
// in its repository rather than on a long command line, and makes the
// extensions it names (declarative checks, plugins, skips) into what a run
// adds to the built-in catalog. Flags given on the command line override
// the file; that merge is the command's, not this package's.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"gopkg.in/yaml.v3"
)

// DefaultName is the file `aiconform check` reads from the working
// directory when --config is not given.
const DefaultName = "aiconform.yaml"

// File is a decoded aiconform.yaml. Paths in it are relative to the file's
// own directory and are made absolute by Load. A zero field means the
// command's default.
type File struct {
	// Run is what `aiconform check` runs when no id is given on the
	// command line: "all", requirement ids or check ids.
	Run []string `yaml:"run"`
	// FailOn is --fail-on: must or should.
	FailOn      string        `yaml:"failOn"`
	Operators   []string      `yaml:"operators"`
	Profiles    []string      `yaml:"profiles"`
	Timeout     time.Duration `yaml:"timeout"`
	Concurrency int           `yaml:"concurrency"`
	Probe       Probe         `yaml:"probe"`
	Redact      Redact        `yaml:"redact"`
	// Skip are requirements or checks the run leaves out, each with the
	// reason the report shows for it.
	Skip []Skip `yaml:"skip"`
	// Data is a directory of data files merged over the built-in ones
	// (exporters.yaml, autoscalers.yaml...): see checks.SetDataOverlay.
	Data string `yaml:"data"`
	// Checks are files of declarative checks.
	Checks []string `yaml:"checks"`
	// Plugins are executables that judge a check each.
	Plugins []Plugin `yaml:"plugins"`

	// Path is where the file was read from.
	Path string `yaml:"-"`
}

// Probe holds the probe flags (--probe, --probe-timeout...).
type Probe struct {
	Enabled    *bool         `yaml:"enabled"`
	Timeout    time.Duration `yaml:"timeout"`
	Image      string        `yaml:"image"`
	ShellImage string        `yaml:"shellImage"`
	LoadImage  string        `yaml:"loadImage"`
	HPAMetric  string        `yaml:"hpaMetric"`
	ScaleUp    *bool         `yaml:"scaleUp"`
}

// Redact holds --redact and --redact-key.
type Redact struct {
	Enabled *bool  `yaml:"enabled"`
	Key     string `yaml:"key"`
}

// Skip leaves a requirement or a check out of the run.
type Skip struct {
	ID     string `yaml:"id"`
	Reason string `yaml:"reason"`
	// Source is file:line, for the report and for errors.
	Source string `yaml:"-"`
}

// Plugin names an executable that judges one check (see package plugin).
// With no Path, it is looked for on PATH as aiconform-check-NAME.
type Plugin struct {
	Name        string        `yaml:"name"`
	Path        string        `yaml:"path"`
	Args        []string      `yaml:"args"`
	ID          string        `yaml:"id"`
	Title       string        `yaml:"title"`
	Requirement string        `yaml:"requirement"`
	Timeout     time.Duration `yaml:"timeout"`
	// Probe marks a plugin that writes to the cluster: it runs only under
	// --probe, after the read-only checks.
	Probe bool `yaml:"probe"`
	// Source is file:line.
	Source string `yaml:"-"`
}

// Error is a mistake in the file, at a line of it. Commands report it as a
// usage error.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Find returns the file to read: explicit when given (it must exist),
// else DefaultName in dir when it is there, else "".
func Find(explicit, dir string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("--config: %w", err)
		}
		return explicit, nil
	}
	p := filepath.Join(dir, DefaultName)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return "", nil
}

// Load reads and checks the file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes data read from path. Every key must be one the file knows
// (a typo names the nearest valid key), and each value is checked before
// anything runs.
func Parse(path string, data []byte) (*File, error) {
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil {
		if err.Error() == "EOF" {
			return &File{Path: path}, nil
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return nil, &Error{Path: path, Line: lineOf(msg), Msg: stripLine(msg)}
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if line, msg := checks.UnknownKey(doc, reflect.TypeOf(File{})); msg != "" {
		return nil, &Error{Path: path, Line: line, Msg: msg}
	}
	f := &File{Path: path}
	if err := doc.Decode(f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			return nil, &Error{Path: path, Line: lineOf(te.Errors[0]), Msg: stripLine(te.Errors[0])}
		}
		return nil, &Error{Path: path, Msg: err.Error()}
	}
	lines := itemLines(doc)
	for i := range f.Skip {
		f.Skip[i].Source = fmt.Sprintf("%s:%d", filepath.Base(path), lines["skip"][i])
	}
	for i := range f.Plugins {
		f.Plugins[i].Source = fmt.Sprintf("%s:%d", filepath.Base(path), lines["plugins"][i])
	}
	if err := f.validate(lines); err != nil {
		return nil, err
	}
	f.resolve(filepath.Dir(path))
	return f, nil
}

// validate checks what YAML types cannot say.
func (f *File) validate(lines map[string][]int) error {
	at := func(key string, i int, format string, args ...any) error {
		line := 0
		if ls := lines[key]; i < len(ls) {
			line = ls[i]
		}
		return &Error{Path: f.Path, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if f.FailOn != "" && f.FailOn != "must" && f.FailOn != "should" {
		return at("failOn", 0, "failOn %q: want must or should", f.FailOn)
	}
	if f.Timeout < 0 || f.Concurrency < 0 || f.Probe.Timeout < 0 {
		return &Error{Path: f.Path, Msg: "timeouts and concurrency must be positive"}
	}
	seen := map[string]bool{}
	for i, s := range f.Skip {
		switch {
		case s.ID == "":
			return at("skip", i, "a skip entry names the id of a requirement or check")
		case strings.TrimSpace(s.Reason) == "":
			return at("skip", i, "skip %s: give the reason the report shows", s.ID)
		case seen[s.ID]:
			return at("skip", i, "skip %s: named twice", s.ID)
		}
		seen[s.ID] = true
	}
	names := map[string]bool{}
	for i, p := range f.Plugins {
		switch {
		case p.Name == "":
			return at("plugins", i, "a plugin has a name")
		case names[p.Name]:
			return at("plugins", i, "plugin %s: named twice", p.Name)
		case p.Requirement == "":
			return at("plugins", i, "plugin %s: name the requirement it belongs to", p.Name)
		case p.Timeout < 0:
			return at("plugins", i, "plugin %s: timeout must be positive", p.Name)
		}
		names[p.Name] = true
	}
	return nil
}

// resolve makes the file's paths relative to its own directory.
func (f *File) resolve(dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for i := range f.Profiles {
		f.Profiles[i] = abs(f.Profiles[i])
	}
	for i := range f.Checks {
		f.Checks[i] = abs(f.Checks[i])
	}
	for i := range f.Plugins {
		// A bare name is looked for on PATH, as a shell would.
		if strings.ContainsRune(f.Plugins[i].Path, filepath.Separator) {
			f.Plugins[i].Path = abs(f.Plugins[i].Path)
		}
	}
	f.Redact.Key = abs(f.Redact.Key)
	f.Data = abs(f.Data)
}

// itemLines are the lines of the items of the top-level lists, by key.
func itemLines(doc *yaml.Node) map[string][]int {
	out := map[string][]int{}
	if doc.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if v.Kind == yaml.SequenceNode {
			for _, c := range v.Content {
				out[k.Value] = append(out[k.Value], c.Line)
			}
		} else {
			out[k.Value] = []int{v.Line}
		}
	}
	return out
}

// lineOf and stripLine split yaml.v3's "line N: message".
func lineOf(msg string) int {
	var n int
	fmt.Sscanf(msg, "line %d:", &n)
	return n
}

func stripLine(msg string) string {
	if _, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "line ") {
		return rest
	}
	return msg
}
