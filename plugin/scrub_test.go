package plugin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestScrub(t *testing.T) {
	secrets := secretValues([]string{
		"GITHUB_TOKEN=ghp_0123456789", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "DB_PASSWORD=hunter2",
		"GIT_AUTHOR_NAME=Ada Lovelace", "HOME=/home/ada", "SSH_KEY_PASSPHRASE_TOKEN=ghp_0123456789-longer", "BROKEN",
	})
	var names []string
	for _, s := range secrets {
		names = append(names, s.name)
	}
	assert.Equal(t, []string{"AWS_SECRET_ACCESS_KEY", "SSH_KEY_PASSPHRASE_TOKEN", "GITHUB_TOKEN"}, names,
		"credential-looking names with values of 8 bytes or more, longest value first")
	assert.Equal(t, "token [$SSH_KEY_PASSPHRASE_TOKEN redacted] and [$GITHUB_TOKEN redacted] for Ada Lovelace, hunter2",
		scrub("token ghp_0123456789-longer and ghp_0123456789 for Ada Lovelace, hunter2", secrets))
}

func TestQuote(t *testing.T) {
	assert.Equal(t, `"short\n"`, quote([]byte("short\n"), nil))
	long := strings.Repeat("é", 400) // 800 bytes: the cut must not split a rune
	q := quote([]byte(long), nil)
	assert.True(t, strings.HasPrefix(q, `"`+strings.Repeat("é", 256)+`"…`), q)
	assert.True(t, strings.HasSuffix(q, "(800 bytes in all)"), q)

	tl := &tail{max: 8}
	_, _ = tl.Write([]byte("0123456789"))
	_, _ = tl.Write([]byte("ab"))
	assert.Equal(t, "456789ab", string(tl.buf))
	assert.Equal(t, `; its stderr: "456789ab"`, stderrTail(tl, nil))
	assert.Equal(t, "", stderrTail(&tail{}, nil))
}
