//go:build unix && !linux

package plugin

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// groupKilledBeforeReap: elsewhere than Linux the leader is reaped by Wait
// first, and the group killed after, best effort.
const groupKilledBeforeReap = false

// ownGroup starts the plugin as the leader of a process group of its own.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// leaderExited cannot wait without reaping here.
func leaderExited(*exec.Cmd) bool { return false }

// killGroup kills the plugin's process group.
func killGroup(cmd *exec.Cmd) error {
	return unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
}
