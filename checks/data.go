package checks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// DataFiles are the data files the checks read (the names Data is called
// with), the ones a user's overlay directory may hold. A test ties this
// list to the files under checks/.
var DataFiles = []string{
	"accelerators.yaml", "dra_drivers.yaml",
	"device_plugins.yaml", "node_labels.yaml", "sharing_labels.yaml",
	"disaggregated.yaml", "network_devices.yaml",
	"exporters.yaml", "monitoring.yaml",
	"autoscalers.yaml", "metrics_adapters.yaml",
	"sandboxes.yaml",
}

// overlays are the user's data files, merged over the built-in ones of
// the same name (SetDataOverlay). They are the process's, as the data is:
// a command sets them once, before its run.
var overlays struct {
	sync.RWMutex
	dir   string
	files map[string][]byte
	// generation counts the overlays set, so that what is computed once
	// from the data is computed again after a change.
	generation int
}

// DataOrigin says where an entry of a data file came from, when it did
// not come built in.
type DataOrigin struct {
	// File is the data file (exporters.yaml), Entry the entry's name.
	File, Entry string
	// Replaced is true when the entry took the place of a built-in one of
	// the same name; false when it was added.
	Replaced bool
	// Source is the user's file.
	Source string
}

// SetDataOverlay merges the data files in dir over the built-in ones from
// now on: an entry with the name (or id) of a built-in entry replaces it
// whole, any other is added. Every file in dir must be named as one of
// DataFiles, and must decode as the built-in one does. "" removes the
// overlay. It returns where each of the user's entries came from.
func SetDataOverlay(dir string) ([]DataOrigin, error) {
	files := map[string][]byte{}
	if dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if !slices.Contains(DataFiles, e.Name()) {
				msg := fmt.Sprintf("%s: no data file of aiconform is named %s", dir, e.Name())
				if near := Nearest(e.Name(), DataFiles); near != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", near)
				}
				return nil, fmt.Errorf("%s; they are: %s", msg, strings.Join(DataFiles, ", "))
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			files[e.Name()] = data
		}
	}
	var origins []DataOrigin
	for _, name := range slices.Sorted(maps.Keys(files)) {
		o, err := overlayOrigins(name, filepath.Join(dir, name), files[name])
		if err != nil {
			return nil, err
		}
		origins = append(origins, o...)
	}
	overlays.Lock()
	defer overlays.Unlock()
	overlays.dir, overlays.files = dir, files
	overlays.generation++
	return origins, nil
}

// DataGeneration is the number of overlays set so far: what is computed
// once from the data is computed again when it changes.
func DataGeneration() int {
	overlays.RLock()
	defer overlays.RUnlock()
	return overlays.generation
}

func overlayOf(name string) (path string, data []byte) {
	overlays.RLock()
	defer overlays.RUnlock()
	if d, ok := overlays.files[name]; ok {
		return filepath.Join(overlays.dir, name), d
	}
	return "", nil
}

// Data decodes a data file a check package embeds (device plugins, DRA
// drivers, sandboxes...) strictly: a key the type does not know is an
// error naming the file, so that a typo in the data cannot pass unseen.
// A user's overlay of the file (SetDataOverlay) is decoded alone first,
// so that its mistakes are told at its own lines, then merged in.
func Data[T any](name string, data []byte) (T, error) {
	if path, over := overlayOf(name); over != nil {
		return decodeOverlay[T](name, data, path, over)
	}
	var v T
	if err := decodeStrict(data, &v); err != nil {
		return v, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// decodeOverlay decodes the overlay read from path alone first, so that
// its mistakes are told at its own lines, then merged over the built-in
// file.
func decodeOverlay[T any](name string, data []byte, path string, over []byte) (T, error) {
	var v T
	switch err := decodeStrict(over, new(T)); {
	case errors.Is(err, io.EOF):
		// Nothing but comments: the built-in file as it is.
		if err := decodeStrict(data, &v); err != nil {
			return v, fmt.Errorf("%s: %w", name, err)
		}
		return v, nil
	case err != nil:
		return v, fmt.Errorf("%s: %w", path, err)
	}
	merged, err := mergeData(data, over)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	if err := decodeStrict(merged, &v); err != nil {
		return v, fmt.Errorf("%s merged over %s: %w", path, name, err)
	}
	return v, nil
}

func decodeStrict(data []byte, v any) error {
	// The file is parsed once, into a node: UnknownKey refuses a key the
	// type does not name, with the nearest right one (yaml.v3's
	// KnownFields would name the check package's Go type instead), and
	// the node is then decoded.
	var n yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&n); err != nil {
		return err
	}
	if line, msg := UnknownKey(&n, reflect.TypeOf(v)); msg != "" {
		return fmt.Errorf("line %d: %s", line, msg)
	}
	return n.Decode(v)
}

// mergeData merges the YAML of over into base: lists of named entries by
// name, mappings key by key, anything else replaced.
func mergeData(base, over []byte) ([]byte, error) {
	var b, o yaml.Node
	if err := yaml.Unmarshal(base, &b); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(over, &o); err != nil {
		return nil, err
	}
	if o.Kind == 0 {
		return base, nil
	}
	merged := mergeNode(&b, &o, func(string, bool) {})
	return yaml.Marshal(merged)
}

// mergeNode merges o into b and returns the result; found is told of each
// named entry of o, and whether it replaced one of b.
func mergeNode(b, o *yaml.Node, found func(entry string, replaced bool)) *yaml.Node {
	switch {
	case b.Kind == yaml.DocumentNode && o.Kind == yaml.DocumentNode && len(b.Content) == 1 && len(o.Content) == 1:
		b.Content[0] = mergeNode(b.Content[0], o.Content[0], found)
		return b
	case b.Kind == yaml.SequenceNode && o.Kind == yaml.SequenceNode:
		for _, item := range o.Content {
			key := entryName(item)
			i := -1
			if key != "" {
				i = slices.IndexFunc(b.Content, func(n *yaml.Node) bool { return entryName(n) == key })
			}
			if i >= 0 {
				b.Content[i] = item
			} else {
				b.Content = append(b.Content, item)
			}
			if key != "" {
				found(key, i >= 0)
			}
		}
		return b
	case b.Kind == yaml.MappingNode && o.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(o.Content); i += 2 {
			k, v := o.Content[i], o.Content[i+1]
			j := slices.IndexFunc(b.Content, func(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Value == k.Value })
			if j >= 0 && j%2 == 0 {
				b.Content[j+1] = mergeNode(b.Content[j+1], v, found)
			} else {
				b.Content = append(b.Content, k, v)
			}
		}
		return b
	}
	return o
}

// entryName is what names an entry of a list: its name, else its id.
func entryName(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for _, key := range []string{"name", "id"} {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key && n.Content[i+1].Kind == yaml.ScalarNode {
				return n.Content[i+1].Value
			}
		}
	}
	return ""
}

// overlayOrigins says, for the overlay of the data file name read from
// path, which entries it adds and which it replaces.
func overlayOrigins(name, path string, over []byte) ([]DataOrigin, error) {
	reg, ok := builtinData[name]
	if !ok {
		return nil, fmt.Errorf("%s: aiconform has no built-in %s", path, name)
	}
	if err := reg.check(path, over); err != nil {
		return nil, err
	}
	var b, o yaml.Node
	if err := yaml.Unmarshal(reg.data, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := yaml.Unmarshal(over, &o); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []DataOrigin
	if o.Kind != 0 {
		mergeNode(&b, &o, func(entry string, replaced bool) {
			out = append(out, DataOrigin{File: name, Entry: entry, Replaced: replaced, Source: path})
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Entry < out[j].Entry })
	return out, nil
}

// builtinData holds each data file's built-in bytes and how to check an
// overlay of it, registered by the package that embeds it (RegisterData).
var builtinData = map[string]registered{}

type registered struct {
	data []byte
	// check decodes an overlay alone, then merged, as Data will.
	check func(path string, over []byte) error
}

// RegisterData records the built-in bytes of the data file name, one of
// DataFiles, decoded as a T, and returns them. A package embedding one
// registers it in a variable's initialiser, so that SetDataOverlay can
// check an overlay of it before any check reads it.
func RegisterData[T any](name string, data []byte) []byte {
	if !slices.Contains(DataFiles, name) {
		panic("checks.RegisterData: " + name + " is not in DataFiles")
	}
	builtinData[name] = registered{data: data, check: func(path string, over []byte) error {
		_, err := decodeOverlay[T](name, data, path, over)
		return err
	}}
	return data
}
