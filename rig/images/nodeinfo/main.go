// Command nodeinfo is the rig's image of a pod that reports what its
// container sees, then exits: the kernel it runs on, the machine's boot,
// and the character devices under /dev, for tests that read it back as
// the pod's log through the API server.
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		fmt.Fprintln(os.Stderr, "uname:", err)
		os.Exit(1)
	}
	fmt.Println("kernel:", cString(u.Release[:]))
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		fmt.Fprintln(os.Stderr, "boot id:", err)
		os.Exit(1)
	}
	fmt.Println("boot_id:", strings.TrimSpace(string(boot)))
	// Each character device as major:minor, the way a device plugin's
	// allocation is told apart from another's.
	_ = filepath.WalkDir("/dev", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeCharDevice == 0 {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Stat(path, &st) == nil {
			fmt.Printf("device: %s %d:%d\n", path, st.Rdev>>8&0xfff, st.Rdev&0xff|st.Rdev>>12&0xfff00)
		}
		return nil
	})
}

// cString is a NUL-terminated utsname field as a string.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
