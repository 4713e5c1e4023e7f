package plugin

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

// waitDelay is how long Wait waits for the plugin's output pipes once its
// process is gone: a process that left the group (setsid) and holds them
// must not hold the check up.
const waitDelay = 2 * time.Second

// stderrKept is how much of a plugin's stderr is kept, from its end, where
// a failing program says why.
const stderrKept = 64 << 10

// ran is how one run of a plugin went.
type ran struct {
	stdout              *bounded
	stderr              *tail
	startErr, exitErr   error
	timedOut, cancelled bool
}

// execute runs spec with body on stdin for at most timeout, or until ctx is
// done, and kills its process group however it ends, so that nothing the
// plugin started is left running.
func execute(ctx context.Context, spec Spec, body []byte, timeout time.Duration) ran {
	r := ran{stdout: &bounded{max: MaxOutput}, stderr: &tail{max: stderrKept}}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	cmd.Env = environ(os.Environ(), spec)
	cmd.WaitDelay = waitDelay
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		r.startErr = err
		return r
	}
	done := make(chan error, 1)
	go func() {
		// Where the platform allows, the group is killed after its leader
		// exits and before it is reaped: the zombie keeps the group's id
		// from being reused, so the kill reaches only what the plugin left.
		if leaderExited(cmd) {
			_ = killGroup(cmd)
		}
		done <- cmd.Wait()
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r.exitErr = <-done:
	case <-timer.C:
		r.exitErr, r.timedOut = stop(cmd, done)
	case <-ctx.Done():
		r.exitErr, r.cancelled = stop(cmd, done)
	}
	if !groupKilledBeforeReap {
		// Best effort where the leader cannot be waited for unreaped.
		_ = killGroup(cmd)
	}
	return r
}

// stop kills the plugin's group, unless it ended at the same moment: then
// its answer stands, and the group, already reaped, is not signalled.
func stop(cmd *exec.Cmd, done <-chan error) (err error, stopped bool) {
	select {
	case err := <-done:
		return err, false
	default:
	}
	_ = killGroup(cmd)
	return <-done, true
}

// environ is the plugin's environment: aiconform's own, as kubectl passes
// its environment to its plugins, because the kubeconfig's credential
// plugins (aws, gke-gcloud-auth-plugin, kubelogin) read theirs from it and
// a plugin is the user's own program, run with the user's rights anyway.
// What a plugin prints is scrubbed of secret-looking variables' values
// before it reaches a report (scrub). AICONFORM_PLUGIN names the plugin, so
// that a program can tell it was run as one.
func environ(parent []string, spec Spec) []string {
	env := make([]string, 0, len(parent)+1)
	for _, kv := range parent {
		if !strings.HasPrefix(kv, "AICONFORM_PLUGIN=") {
			env = append(env, kv)
		}
	}
	return append(env, "AICONFORM_PLUGIN="+spec.Name)
}

// bounded keeps the first max bytes written and drops the rest, still
// draining the pipe so the plugin does not block on a full one. The buffer
// is a field, not embedded: an embedded bytes.Buffer's ReadFrom would let
// io.Copy bypass the bound.
type bounded struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *bounded) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Bytes is what was kept.
func (b *bounded) Bytes() []byte { return b.buf.Bytes() }

// tail keeps the last max bytes written.
type tail struct {
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}
