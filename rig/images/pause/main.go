// Command pause is the rig's sandbox image: it holds a pod's namespaces by
// doing nothing until it is told to stop, as every pod's first process.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	// As PID 1 of its namespace it also reaps orphans: children of a
	// process that ended are re-parented here.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGCHLD)
	go func() {
		for {
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(-1, &ws, 0, nil); err != nil {
				select {} // no children at all: nothing to reap
			}
		}
	}()
	<-stop
}
