//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// Process returns the CPU time this process has used so far
// (getrusage), and false where the system cannot tell.
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
