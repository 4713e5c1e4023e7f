package rig

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessMemory reads a process's resident set size and its peak (VmRSS and
// VmHWM of /proc/PID/status) in KiB; zeros when the process is gone.
func ProcessMemory(pid int) (rss, peak int) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = kib(v)
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			peak = kib(v)
		}
	}
	return rss, peak
}

func kib(v string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
	return n
}
