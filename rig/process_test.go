package rig

import (
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockEnv makes the test binary, re-executed as a child, wait for a
// signal instead of running tests. The children are this binary rather
// than the machine's sleep, which a CI sandbox may wrap in a script whose
// command line names the shell: isOurs would then rightly refuse it.
const blockEnv = "AICONFORM_RIG_TEST_BLOCK"

func init() {
	if os.Getenv(blockEnv) == "" {
		return
	}
	// init runs before any TestMain, so the e2e build's rig never starts
	// in a child.
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
	os.Exit(0)
}

// blocker returns the executable and environment of a child that runs
// until it is signalled.
func blocker(t *testing.T) (string, []string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return exe, []string{blockEnv + "=1"}
}

func TestStopDirStopsOnlyRecordedProcesses(t *testing.T) {
	exe, env := blocker(t)
	dir := t.TempDir()

	// Started detached, as `rig up` does, then forgotten by this process:
	// StopDir must find it through state.json alone.
	p, err := startProcess("sleeper", exe, nil, dir, env, true)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })

	// A live process the rig did not start, recorded with another
	// executable: StopDir must leave it alone.
	other := exec.Command(exe)
	other.Env = env
	require.NoError(t, other.Start())
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })

	st := state{Processes: []*process{
		{Name: "sleeper", PID: p.PID, Exe: exe},
		{Name: "impostor", PID: other.Process.Pid, Exe: "/not/the/same/binary"},
	}}
	data, err := json.Marshal(st)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, stateFile), data, 0o644))

	// Said first, so a failure below tells a stop that did not happen from
	// a process that was never recognised.
	cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "cmdline"))
	require.True(t, st.Processes[0].isOurs(), "the recorded child is not recognised: /proc/%d/cmdline %q, executable %q", p.PID, cmdline, exe)

	require.NoError(t, StopDir(dir))
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("recorded process still running")
	}
	assert.Nil(t, other.ProcessState, "unrecorded process must not be reaped")
	assert.True(t, (&process{PID: other.Process.Pid, Exe: exe}).isOurs(), "unrecorded process still running")
	_, err = os.Stat(filepath.Join(dir, stateFile))
	assert.ErrorIs(t, err, os.ErrNotExist, "state file removed after stop")

	// Nothing recorded: nothing to do.
	assert.NoError(t, StopDir(t.TempDir()))
}

func TestProcessExitErrorCarriesLog(t *testing.T) {
	dir := t.TempDir()
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	p, err := startProcess("failing", sh, []string{"-c", "echo cannot bind port >&2; exit 3"}, dir, nil, false)
	require.NoError(t, err)
	<-p.exited
	assert.False(t, p.running())
	assert.ErrorContains(t, p.exitError(), "cannot bind port")
	assert.ErrorContains(t, p.exitError(), "exit status 3")
}

func TestProcessExitErrorPortTaken(t *testing.T) {
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	p, err := startProcess("etcd", sh, []string{"-c", "echo 'listen tcp 127.0.0.1:2379: bind: address already in use' >&2; exit 1"}, t.TempDir(), nil, false)
	require.NoError(t, err)
	<-p.exited
	assert.ErrorIs(t, p.exitError(), errPortTaken, "start-up is retried on this error")
}
