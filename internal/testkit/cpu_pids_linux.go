package testkit

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// Pids returns the CPU time, user and system, that each process of pids
// has used so far, read from /proc; a process that has gone, or that this
// system does not show (a server on another machine), is left out.
func PidsCPU(pids []int) map[int]time.Duration {
	cpu := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command name, which ends with the last ')':
		// state is field 3 of stat(5), utime and stime fields 14 and 15.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 13 {
			continue
		}
		utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
		stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		// /proc counts in clock ticks of USER_HZ, 100 per second on Linux.
		cpu[pid] = time.Duration(utime+stime) * (time.Second / 100)
	}
	return cpu
}
