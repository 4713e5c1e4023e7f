package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolModulesAligned fails when a go.mod of the repository builds a
// client library at another version than a module of the same Kubernetes
// minor: a cold CI would compile its packages twice.
func TestToolModulesAligned(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	if err := run(true); err != nil {
		t.Fatal(err)
	}
}

// TestCheckNamesWhatDiffers holds -check to saying which module differs,
// on two modules of one minor that disagree on x/net.
func TestCheckNamesWhatDiffers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n\nrequire (\n\tk8s.io/apimachinery v0.37.2\n\tgolang.org/x/net v0.61.0\n)\n")
	write("tools/a/go.mod", "module example.com/a\n\ngo 1.26\n\nrequire (\n\tk8s.io/apimachinery v0.37.1\n\tgolang.org/x/net v0.58.0\n\tk8s.io/kubectl v0.38.0\n\tgithub.com/other/lib v1.0.0\n)\n")
	write("tools/b/go.mod", "module example.com/b\n\ngo 1.26\n\nrequire (\n\tk8s.io/apimachinery v0.36.3\n\tgolang.org/x/net v0.70.0\n)\n")
	write("tools/c/go.mod", "module example.com/c\n\ngo 1.26\n\nrequire (\n\tk8s.io/apimachinery v0.37.2\n\tk8s.io/kubectl v0.37.2\n\tgithub.com/other/lib v1.1.0\n)\n\nreplace golang.org/x/net => golang.org/x/net v0.60.0\n")
	t.Chdir(dir)
	out := captureStdout(t, func() {
		err := run(true)
		if err == nil || !strings.Contains(err.Error(), "3 client libraries differ") {
			t.Errorf("run(check) = %v, want 3 differing", err)
		}
	})
	// tools/b is another minor; github.com/other/lib is not a client
	// library; k8s.io/kubectl v0.38.0 is outside the group's minor.
	want := "tools/a: golang.org/x/net v0.58.0, v0.61.0 elsewhere in v0.37\n" +
		"tools/a: k8s.io/apimachinery v0.37.1, v0.37.2 elsewhere in v0.37\n" +
		"tools/c: golang.org/x/net v0.60.0, v0.61.0 elsewhere in v0.37\n"
	if out != want {
		t.Errorf("-check printed\n%s\nwant\n%s", out, want)
	}
}

func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = old }()
	f()
	w.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
