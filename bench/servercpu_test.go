package main

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestProcessCPUMatchesProc checks the two readings of CPU time against each
// other on this process: getrusage, which CPU/req uses, and /proc, which
// the PostgreSQL server's gauge uses.
func TestProcessCPUMatchesProc(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is read on Linux only")
	}
	self := []int{os.Getpid()}
	r0, ok := processCPU()
	p0, found := pidsCPU(self)[os.Getpid()]
	if !ok || !found {
		t.Fatalf("processCPU %v (ok %v), /proc found %v: no reading", r0, ok, found)
	}
	x := 0
	for {
		for i := range 1 << 20 {
			x ^= i * i
		}
		if r, _ := processCPU(); r-r0 >= 300*time.Millisecond {
			break
		}
	}
	r1, _ := processCPU()
	p1 := pidsCPU(self)[os.Getpid()]
	// /proc counts in 10 ms ticks; allow three, and the other goroutines'.
	if d := (p1 - p0) - (r1 - r0); d < -30*time.Millisecond || d > 30*time.Millisecond {
		t.Errorf("getrusage counted %v, /proc %v (x %d)", r1-r0, p1-p0, x)
	}
}

// TestServerCPUGauges checks that each server's gauge counts the work done
// on its server while it runs, the PostgreSQL one also on a connection opened
// after it started (as a pool opens them under load), and only that work.
func TestServerCPUGauges(t *testing.T) {
	o := tinyOptions(t)
	ctx := context.Background()
	sv, err := openServices(ctx, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.close(ctx)

	end := sv.redisCPU(ctx)
	key := sv.prefix + "gauge"
	for range 3000 {
		if err := sv.redis.Set(ctx, key, "x", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if used, ok := end(); !ok || used <= 0 {
		t.Errorf("Redis gauge: %v (ok %v) after 3000 SETs", used, ok)
	}

	if runtime.GOOS != "linux" {
		t.Skip("the PostgreSQL gauge reads /proc, on Linux only")
	}
	end = sv.postgresCPU(ctx)
	conn, err := pgx.Connect(ctx, o.postgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var work time.Duration
	start := time.Now()
	var sum int64
	if err := conn.QueryRow(ctx, `SELECT sum(i) FROM generate_series(1, 3000000) i`).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	work = time.Since(start)
	used, ok := end()
	if !ok {
		t.Fatal("PostgreSQL gauge: no reading (is the server on this machine?)")
	}
	// The query's backend is busy on a core for most of its wall time;
	// at least half of it must show, and not much more than the server
	// could use on every core.
	if used < work/2 || used > work*time.Duration(runtime.NumCPU())+100*time.Millisecond {
		t.Errorf("PostgreSQL gauge: %v for a query of %v on a new connection", used, work)
	}
}
