package plugin

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Discover finds the plugins on path, a PATH-like list of directories: the
// executables named aiconform-check-NAME (NAME.exe on Windows). As with
// PATH itself, the first directory that holds a name wins; the others of
// that name are returned apart, as shadowed, so that `aiconform list` can
// warn that they never run. Specs come sorted by name, Source "PATH".
//
// Empty and relative entries are skipped: an empty one means the working
// directory to a shell, and a check that runs whatever a checked-out
// repository holds is not one the user chose.
func Discover(path string) (found, shadowed []Spec) {
	byName := map[string]bool{}
	seenDir := map[string]bool{}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		dir = filepath.Clean(dir)
		if seenDir[dir] {
			continue // the same directory twice shadows nothing
		}
		seenDir[dir] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // a missing directory on PATH is common and harmless
		}
		for _, e := range entries {
			name, ok := pluginName(e.Name())
			if !ok {
				continue
			}
			file := filepath.Join(dir, e.Name())
			if !executable(file) {
				continue
			}
			spec := Spec{Name: name, Path: file, Source: "PATH"}
			if byName[name] {
				shadowed = append(shadowed, spec)
				continue
			}
			byName[name] = true
			found = append(found, spec)
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].Name < found[j].Name })
	sort.SliceStable(shadowed, func(i, j int) bool { return shadowed[i].Name < shadowed[j].Name })
	return found, shadowed
}

// pluginName is NAME of aiconform-check-NAME, a name a check id can carry:
// lowercase letters, digits and inner dashes.
func pluginName(file string) (string, bool) {
	if runtime.GOOS == "windows" {
		var ok bool
		if file, ok = strings.CutSuffix(strings.ToLower(file), ".exe"); !ok {
			return "", false
		}
	}
	name, ok := strings.CutPrefix(file, Prefix)
	if !ok || !ValidName(name) {
		return "", false
	}
	return name, true
}

// ValidName says whether name can name a plugin: lowercase letters, digits
// and inner dashes, as check ids are kebab-case and "plugin-"+name is one.
func ValidName(name string) bool {
	if name == "" || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// executable follows links and says whether file is a regular file
// someone may execute (on Windows, the .exe suffix said so).
func executable(file string) bool {
	fi, err := os.Stat(file)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0
}
