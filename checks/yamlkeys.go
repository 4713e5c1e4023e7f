package checks

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// UnknownKey walks a YAML node against the Go type it is to be decoded
// into (its fields' yaml tags, in nested structs and lists too) and
// returns the line and text of the first key that type does not name,
// with the nearest valid key; msg is "" when every key is known. yaml.v3's
// KnownFields would name a Go type ("not found in type checks.Profile")
// and no alternative, where the user wrote YAML and likely misspelt a key.
func UnknownKey(n *yaml.Node, t reflect.Type) (line int, msg string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	switch {
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for _, c := range n.Content {
			if line, msg := UnknownKey(c, t.Elem()); msg != "" {
				return line, msg
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := map[string]reflect.Type{}
		var names []string
		for i := range t.NumField() {
			tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = t.Field(i).Type
			names = append(names, tag)
		}
		sort.Strings(names)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				msg := "unknown key " + strconv.Quote(k.Value)
				if near := Nearest(k.Value, names); near != "" {
					msg += "; did you mean " + strconv.Quote(near) + "?"
				} else {
					msg += "; known keys: " + strings.Join(names, ", ")
				}
				return k.Line, msg
			}
			if line, msg := UnknownKey(v, ft); msg != "" {
				return line, msg
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() != reflect.Map:
		return n.Line, "a mapping where a " + yamlKind(t) + " belongs"
	}
	return 0, ""
}

// yamlKind names what a value of type t is written as in YAML.
func yamlKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "list"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		if t == reflect.TypeOf(time.Duration(0)) {
			return "duration (30s, 5m)"
		}
		return "number"
	}
	return "string"
}
