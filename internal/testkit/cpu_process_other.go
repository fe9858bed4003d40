//go:build !unix

package testkit

import "time"

// Process reports that this system cannot tell the process's CPU time.
func ProcessCPU() (time.Duration, bool) { return 0, false }
