package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/release.md is the one description of a release: its platforms, its
// build flags and the files its archives hold are the program's, and no
// other release configuration contradicts it.
func TestReleaseDocMatches(t *testing.T) {
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "docs", "release.md"))
	require.NoError(t, err)
	doc := string(data)

	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight"}
	require.Less(t, len(DefaultPlatforms), len(words))
	assert.Contains(t, doc, "the binaries of "+words[len(DefaultPlatforms)]+" platforms")

	var tarred, zipped []string
	for _, p := range DefaultPlatforms {
		if strings.HasPrefix(p, "windows/") {
			zipped = append(zipped, p)
		} else {
			tarred = append(tarred, p)
		}
	}
	row := regexp.MustCompile("(?m)^\\| `aiconform_VERSION_OS_ARCH\\.tar\\.gz` \\| ([^:]+):").FindStringSubmatch(doc)
	require.NotNil(t, row, "docs/release.md has no row for the tar.gz archives")
	assert.Equal(t, tarred, strings.Split(row[1], ", "), "the platforms of the tar.gz archives")
	for _, p := range zipped {
		assert.Contains(t, doc, "the same for "+p)
	}

	// The build flags the page gives are the ones build() passes.
	src, err := os.ReadFile("release.go")
	require.NoError(t, err)
	for _, flag := range []string{"-trimpath", "-buildvcs=auto", `"-s -w -X main.version="`} {
		assert.Contains(t, string(src), flag)
	}
	assert.Contains(t, doc, "`CGO_ENABLED=0 -trimpath -buildvcs=auto -ldflags \"-s -w -X\n  main.version=VERSION\"`")

	// What the archives hold beside the binary.
	docs, err := archiveDocs(root)
	require.NoError(t, err)
	var names []string
	for _, d := range docs {
		names = append(names, "`"+d.name+"`")
	}
	slices.Sort(names)
	assert.Equal(t, []string{"`LICENSE`", "`README.md`"}, names)
	assert.Contains(t, doc, "the binary `aiconform`, `README.md` and `LICENSE`")

	for _, other := range []string{".goreleaser.yaml", ".goreleaser.yml"} {
		_, err := os.Stat(filepath.Join(root, other))
		assert.True(t, os.IsNotExist(err), "%s describes a release too: docs/release.md and tools/release are the one description", other)
	}
}
