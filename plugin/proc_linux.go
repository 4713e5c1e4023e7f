//go:build linux

package plugin

import (
	"errors"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// groupKilledBeforeReap: on Linux the leader is waited for with WNOWAIT.
const groupKilledBeforeReap = true

// ownGroup starts the plugin as the leader of a process group of its own,
// so that one kill reaches every process it started (unless one leaves the
// group with setsid, which a plugin must not do).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// leaderExited blocks until the plugin's process exited, leaving it for
// Wait to reap.
func leaderExited(cmd *exec.Cmd) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err == nil
		}
	}
}

// killGroup kills the plugin's process group; the group's id is its
// leader's pid.
func killGroup(cmd *exec.Cmd) error {
	return unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
}
