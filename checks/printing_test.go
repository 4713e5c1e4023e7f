package checks_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/stretchr/testify/assert"
)

func TestCommandOutputs(t *testing.T) {
	assert.Equal(t, "echo '$ uname -r'; uname -r 2>&1; echo '$ nvidia-smi -L'; nvidia-smi -L 2>&1; exit 0",
		checks.CommandsScript("uname -r", "nvidia-smi -L"))
	out := "runtime warning\n$ uname -r\n6.8.0-1015-gke\n\n$ nvidia-smi -L\r\nsh: nvidia-smi: not found\n"
	assert.Equal(t, map[string]string{"uname -r": "6.8.0-1015-gke", "nvidia-smi -L": "sh: nvidia-smi: not found"}, checks.CommandOutputs(out))
	assert.Empty(t, checks.CommandOutputs("exec /bin/sh: no such file or directory\n"))
}
