//go:build !linux

package testkit

import "time"

// Pids reports nothing: reading other processes' CPU time is done on
// Linux only.
func PidsCPU([]int) map[int]time.Duration { return nil }
