package rig

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sleepBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	return p
}

func TestStopDirStopsOnlyRecordedProcesses(t *testing.T) {
	sleep := sleepBinary(t)
	dir := t.TempDir()

	// Started detached, as `rig up` does, then forgotten by this process:
	// StopDir must find it through state.json alone.
	p, err := startProcess("sleeper", sleep, []string{"300"}, dir, nil, true)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })

	// A live process the rig did not start, recorded with another
	// executable: StopDir must leave it alone.
	other := exec.Command(sleep, "300")
	require.NoError(t, other.Start())
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })

	st := state{Processes: []*process{
		{Name: "sleeper", PID: p.PID, Exe: sleep},
		{Name: "impostor", PID: other.Process.Pid, Exe: "/not/the/same/binary"},
	}}
	data, err := json.Marshal(st)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, stateFile), data, 0o644))

	require.NoError(t, StopDir(dir))
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("recorded process still running")
	}
	assert.Nil(t, other.ProcessState, "unrecorded process must not be reaped")
	assert.True(t, (&process{PID: other.Process.Pid, Exe: sleep}).isOurs(), "unrecorded process still running")
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
