package main

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// A cpuGauge measures the CPU time a server uses: called before a
// measurement, it returns the function to call after it, which returns the
// CPU time the server used in between, and false if it cannot tell.
type cpuGauge func(ctx context.Context) (end func() (time.Duration, bool))

// redisCPU is the Redis server's gauge: its own count of the CPU time it
// has used, user and system (INFO cpu: used_cpu_user, used_cpu_sys).
func (sv *services) redisCPU(ctx context.Context) func() (time.Duration, bool) {
	read := func() (time.Duration, bool) {
		info, err := sv.redis.Info(ctx, "cpu").Result()
		if err != nil {
			return 0, false
		}
		var sum float64
		found := 0
		for line := range strings.Lines(info) {
			name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok || (name != "used_cpu_user" && name != "used_cpu_sys") {
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, false
			}
			sum += f
			found++
		}
		return time.Duration(sum * float64(time.Second)), found == 2
	}
	before, ok := read()
	return func() (time.Duration, bool) {
		after, ok2 := read()
		return after - before, ok && ok2
	}
}

// postgresCPU is the PostgreSQL server's gauge: the CPU time, user and
// system, of every process pg_stat_activity lists (the connections' backends,
// the WAL writer, the checkpointer and the other background processes), read
// from /proc, so only for a server on this machine (Linux). A process that
// started during the measurement (a connection the pool opened) counts with
// all its CPU time; one that ended during it is missed.
func (sv *services) postgresCPU(ctx context.Context) func() (time.Duration, bool) {
	pids := func() []int {
		rows, err := sv.pool.Query(ctx, `SELECT pid FROM pg_stat_activity`)
		if err != nil {
			return nil
		}
		defer rows.Close()
		var pids []int
		for rows.Next() {
			var pid int32
			if rows.Scan(&pid) == nil {
				pids = append(pids, int(pid))
			}
		}
		return pids
	}
	before := pidsCPU(pids())
	return func() (time.Duration, bool) {
		if len(before) == 0 {
			return 0, false
		}
		// Read the known processes first, so that the query that lists the
		// new ones does not count.
		known := make([]int, 0, len(before))
		for pid := range before {
			known = append(known, pid)
		}
		after := pidsCPU(known)
		var fresh []int
		for _, pid := range pids() {
			if _, ok := before[pid]; !ok {
				fresh = append(fresh, pid)
			}
		}
		var used time.Duration
		for pid, t := range after {
			used += t - before[pid]
		}
		for _, t := range pidsCPU(fresh) {
			used += t
		}
		return used, true
	}
}
