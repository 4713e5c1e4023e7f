package rig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one component the rig started. The rig only ever signals
// PIDs it started itself (recorded here and in the state file).
type process struct {
	Name string   `json:"name"`
	PID  int      `json:"pid"`
	Exe  string   `json:"exe"`
	Args []string `json:"args"`
	Log  string   `json:"log"`

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been reaped
	err    error         // Wait's result, valid once exited is closed
}

// startProcess runs exe with args, its output in logDir/name.log.
// Detached processes get their own session so they outlive the command
// that started them (make cluster-up); attached ones receive SIGTERM if
// the starting thread dies, so a crashed test does not leak a control
// plane.
func startProcess(name, exe string, args []string, logDir string, env []string, detached bool, files ...*os.File) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The child holds its own copy of the descriptor.
	defer logf.Close()

	cmd := exec.Command(exe, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = env
	// Descriptors the child inherits as 3, 4...: listeners a namespace's
	// holder serves (nodenet.go).
	cmd.ExtraFiles = files
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		// Its own process group keeps a terminal's Ctrl-C from reaching the
		// components before the rig stops them in order.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{Name: name, PID: cmd.Process.Pid, Exe: exe, Args: args, Log: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// running reports whether a process the rig started is still running.
func (p *process) running() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
			return true
		}
	}
	return p.isOurs()
}

// isOurs checks, for a PID read back from a state file, that the process
// still runs the recorded executable: after a reboot or a long pause the
// PID may belong to someone else, and that process must not be signalled.
func (p *process) isOurs() bool {
	if p.PID <= 0 {
		return false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "cmdline"))
	if err != nil || len(cmdline) == 0 {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	if string(argv0) != p.Exe {
		return false
	}
	// A zombie still has a /proc entry; it is already gone for our purposes.
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "stat"))
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	return true
}

// stop sends SIGTERM, waits up to grace for the process to exit, then
// sends SIGKILL. It only acts on a process this rig started.
func (p *process) stop(grace time.Duration) error {
	if !p.running() {
		return nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s (pid %d): %w", p.Name, p.PID, err)
	}
	if p.waitExit(grace) {
		return nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", p.Name, p.PID, err)
	}
	if !p.waitExit(5 * time.Second) {
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.PID)
	}
	return nil
}

func (p *process) waitExit(d time.Duration) bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return true
		case <-time.After(d):
			return false
		}
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !p.isOurs() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return !p.isOurs()
}

// errPortTaken marks a component that died because its port was taken.
var errPortTaken = errors.New("port already in use")

// exitError describes how a process ended, with the tail of its log, for
// the error returned when a component dies during start-up.
func (p *process) exitError() error {
	tail, _ := tailFile(p.Log, 2048)
	if strings.Contains(tail, "address already in use") {
		return fmt.Errorf("%s exited (%v): %w; last output:\n%s", p.Name, p.err, errPortTaken, tail)
	}
	return fmt.Errorf("%s exited (%v); last output:\n%s", p.Name, p.err, tail)
}

func tailFile(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	_, err = f.ReadAt(buf, off)
	return string(buf), err
}

// shortSocket is dir/name, or the same name in a new temporary folder when
// that path is longer than a unix socket's address may be.
func shortSocket(dir, name string) (string, error) {
	if p := filepath.Join(dir, name); len(p) <= 100 {
		return p, nil
	}
	d, err := os.MkdirTemp("", "rig-sock")
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name), nil
}

// waitSocket waits until a unix socket accepts, or p exits.
func waitSocket(ctx context.Context, p *process, sock string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		if conn, err := net.Dial("unix", sock); err == nil {
			_ = conn.Close()
			return nil
		}
		if err := pause(ctx, 50*time.Millisecond, p); err != nil {
			return fmt.Errorf("%s did not listen on %s: %w", p.Name, sock, err)
		}
	}
}
