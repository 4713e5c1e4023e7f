package main

import (
	"os"

	"github.com/aiconform/aiconform/redact"
)

// minRedactKey is the shortest --redact-key accepted. Whoever knows the key
// can hash every IPv4 address and find the ones a report hides, so a key must
// be past guessing.
const minRedactKey = 16

// newRedactor returns the redactor of --redact, nil without it. Its key is the
// bytes of keyFile (kept off the command line, where ps and shell history
// would show it) or, without one, random bytes of this run only, written
// nowhere: pseudonyms then differ from one run to the next.
func newRedactor(enabled bool, keyFile string) (*redact.Redactor, error) {
	if !enabled {
		return nil, nil
	}
	if keyFile == "" {
		return redact.New(nil), nil
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, usageErrorf("--redact-key: %v", err)
	}
	if len(key) < minRedactKey {
		return nil, usageErrorf("--redact-key %s holds %d bytes; a key needs at least %d (head -c 32 /dev/urandom > %s)", keyFile, len(key), minRedactKey, keyFile)
	}
	return redact.New(key), nil
}
