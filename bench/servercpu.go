package main

import (
	"context"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// A cpuGauge measures the CPU time a server uses: called before a
// measurement, it returns the function to call after it, which returns the
// CPU time the server used in between, and false if it cannot tell.
type cpuGauge func(ctx context.Context) (end func() (time.Duration, bool))

// redisCPU is the Redis server's gauge: its own count of the CPU time it
// has used (testkit.RedisCPU).
func (sv *services) redisCPU(ctx context.Context) func() (time.Duration, bool) {
	before, err := testkit.RedisCPU(ctx, sv.redis)
	return func() (time.Duration, bool) {
		after, err2 := testkit.RedisCPU(ctx, sv.redis)
		return after - before, err == nil && err2 == nil
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
	before := testkit.PidsCPU(pids())
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
		after := testkit.PidsCPU(known)
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
		for _, t := range testkit.PidsCPU(fresh) {
			used += t
		}
		return used, true
	}
}
