//go:build !unix

package cpustat

import "time"

// Process reports that this system cannot tell the process's CPU time.
func Process() (time.Duration, bool) { return 0, false }
