package plugin

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// secret is an environment variable whose value must not reach a report.
type secret struct{ name, value string }

// secretWords mark a variable's name as holding a credential.
var secretWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "_KEY", "APIKEY", "AUTH"}

// minSecret is the shortest value scrubbed: a shorter one ("1", "true")
// would blank ordinary words of the output and protects nothing.
const minSecret = 8

// secretValues picks the variables of env (KEY=value) whose name looks like
// a credential's. The plugin inherits aiconform's environment, so a plugin
// that echoes it (a debug dump, an error quoting a request) would otherwise
// put those values in a report.
func secretValues(env []string) []secret {
	var out []secret
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || len(value) < minSecret {
			continue
		}
		// GIT_AUTHOR_NAME names a person, not a credential.
		upper := strings.ReplaceAll(strings.ToUpper(name), "AUTHOR", "")
		for _, w := range secretWords {
			if strings.Contains(upper, w) {
				out = append(out, secret{name, value})
				break
			}
		}
	}
	// Longest first, so that a value containing another is replaced whole.
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].value) > len(out[j].value) })
	return out
}

// scrub replaces each secret's value in s by the variable's name.
func scrub(s string, secrets []secret) string {
	for _, sec := range secrets {
		if strings.Contains(s, sec.value) {
			s = strings.ReplaceAll(s, sec.value, "[$"+sec.name+" redacted]")
		}
	}
	return s
}

// quoteMax is how much of a plugin's output a reason quotes: enough to see
// what it printed instead of an answer, short enough for a one-line reason.
const quoteMax = 512

// quote is a bounded prefix of out, escaped onto one line.
func quote(out []byte, secrets []secret) string {
	s := scrub(string(out), secrets)
	if len(s) <= quoteMax {
		return fmt.Sprintf("%q", s)
	}
	cut := quoteMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes in all)", s[:cut], len(out))
}

// stderrTail is the end of what the plugin wrote on stderr, for a reason.
func stderrTail(t *tail, secrets []secret) string {
	s := strings.TrimSpace(scrub(string(t.buf), secrets))
	if s == "" {
		return ""
	}
	if len(s) > quoteMax {
		cut := len(s) - quoteMax
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		return fmt.Sprintf("; its stderr ends: …%q", s[cut:])
	}
	return fmt.Sprintf("; its stderr: %q", s)
}
