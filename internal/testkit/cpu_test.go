package testkit

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestProcessMatchesPids checks the two readings of CPU time against each
// other on this process: getrusage (Process) and /proc (Pids).
func TestProcessMatchesPids(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is read on Linux only")
	}
	self := []int{os.Getpid()}
	r0, ok := ProcessCPU()
	p0, found := PidsCPU(self)[os.Getpid()]
	if !ok || !found {
		t.Fatalf("Process %v (ok %v), /proc found %v: no reading", r0, ok, found)
	}
	x := 0
	for {
		for i := range 1 << 20 {
			x ^= i * i
		}
		if r, _ := ProcessCPU(); r-r0 >= 300*time.Millisecond {
			break
		}
	}
	r1, _ := ProcessCPU()
	p1 := PidsCPU(self)[os.Getpid()]
	// /proc counts in 10 ms ticks; allow three, and the other goroutines'.
	if d := (p1 - p0) - (r1 - r0); d < -30*time.Millisecond || d > 30*time.Millisecond {
		t.Errorf("getrusage counted %v, /proc %v (x %d)", r1-r0, p1-p0, x)
	}
}
