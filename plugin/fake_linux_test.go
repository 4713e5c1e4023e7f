//go:build linux

package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// readyEnv names a FIFO a fake plugin writes "PLUGIN_PID CHILD_PID" to once
// it started its child, so that a test knows both without sleeping.
const readyEnv = "AICONFORM_FAKE_READY"

// TestMain makes the test binary its own fake plugins: run as a plugin
// (AICONFORM_PLUGIN set, to the spec's name), it behaves as that name says.
// Otherwise it runs the tests as a child subreaper, so that a plugin's
// orphaned child is reparented to the test, which can then wait for it and
// tell it was killed, whatever the machine's init does with orphans.
func TestMain(m *testing.M) {
	if mode := os.Getenv("AICONFORM_PLUGIN"); mode != "" {
		os.Exit(fake(mode))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "become a subreaper:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// fake is one fake plugin; it returns its exit code.
func fake(mode string) int {
	if mode == "no-read" {
		// Answers without reading its request: aiconform must not care.
		fmt.Println(`{"apiVersion":"` + APIVersion + `","status":"pass","reason":"did not read"}`)
		return 0
	}
	in, _ := io.ReadAll(os.Stdin)
	var req Request
	_ = json.Unmarshal(in, &req)
	answer := func(status, reason string, details ...string) {
		a := map[string]any{"apiVersion": APIVersion, "status": status, "reason": reason, "details": details,
			"evidence": []map[string]any{{
				"command": "kubectl get nodes", "output": "NAME   STATUS\nn1     Ready\n",
				"capturedAt": "2026-12-07T06:50:00Z", "note": "from the fake",
			}}}
		_ = json.NewEncoder(os.Stdout).Encode(a)
	}
	switch mode {
	case "pass":
		answer("pass", "every node is labelled",
			"runID="+req.RunID, "check="+req.Check, "requirement="+req.Requirement,
			"kubeconfig="+req.Kubeconfig, "context="+req.Context, "probe="+strconv.FormatBool(req.Probe),
			"timeoutSeconds="+strconv.FormatFloat(req.TimeoutSeconds, 'f', -1, 64),
			"deadline="+req.Deadline.Format("2006-01-02T15:04:05Z07:00"),
			"token="+os.Getenv("FAKE_API_TOKEN"))
	case "fail":
		answer("fail", "node n2 has no label\nsecond line")
	case "invalid":
		fmt.Println("this is not JSON: " + strings.Repeat("x", 2000))
	case "exit":
		answer("pass", "a pass printed before dying does not count")
		fmt.Fprintln(os.Stderr, "boom: cannot reach the cluster, token", os.Getenv("FAKE_API_TOKEN"))
		return 3
	case "request":
		requestEcho(in)
	case "silent":
		fmt.Fprintln(os.Stderr, "no cluster today")
	case "no-status":
		fmt.Println(`{"apiVersion":"` + APIVersion + `","reason":"all good"}`)
	case "status-ok":
		fmt.Println(`{"apiVersion":"` + APIVersion + `","status":"ok","reason":"all good"}`)
	case "no-captured-at":
		fmt.Println(`{"apiVersion":"` + APIVersion + `","status":"pass","reason":"all good","evidence":[{"command":"kubectl get nodes","output":""}]}`)
	case "huge":
		chunk := strings.Repeat("y", 64<<10)
		for i := 0; i <= MaxOutput/len(chunk); i++ {
			fmt.Print(chunk)
		}
	case "hang", "orphan":
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "AICONFORM_PLUGIN=sleep")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if f, err := os.OpenFile(os.Getenv(readyEnv), os.O_WRONLY, 0); err == nil {
			fmt.Fprintf(f, "%d %d\n", os.Getpid(), child.Process.Pid)
			f.Close()
		}
		if mode == "orphan" {
			answer("pass", "done, leaving a child behind")
			return 0
		}
		fmt.Fprintln(os.Stderr, "waiting for ever")
		block()
	case "sleep":
		block()
	default:
		fmt.Fprintln(os.Stderr, "unknown fake", mode)
		return 99
	}
	return 0
}

// block waits for a signal that never comes; a plugin that hangs.
func block() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	<-c
}

// requestEcho is the fake that answers with the request it read, verbatim.
func requestEcho(in []byte) {
	a := map[string]any{"apiVersion": APIVersion, "status": "skip", "reason": "echo", "details": []string{string(in)}}
	_ = json.NewEncoder(os.Stdout).Encode(a)
}
