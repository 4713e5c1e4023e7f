//go:build !unix

package plugin

import "os/exec"

// groupKilledBeforeReap: without process groups only the plugin's own
// process is killed.
const groupKilledBeforeReap = false

func ownGroup(*exec.Cmd) {}

func leaderExited(*exec.Cmd) bool { return false }

// killGroup kills the plugin's process; on Windows what it started is not
// reached (a job object would be), which docs/extending.md says.
func killGroup(cmd *exec.Cmd) error {
	return cmd.Process.Kill()
}
