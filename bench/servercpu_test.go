package main

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/internal/testkit"
)

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
	started := time.Now()
	end = sv.postgresCPU(ctx)
	conn, err := pgx.Connect(ctx, o.postgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pid int32
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	// Work on the new connection until its backend has used 100 ms of CPU
	// by /proc's own count, however long a loaded machine takes to give it.
	var backend time.Duration
	for i := 0; backend < 100*time.Millisecond; i++ {
		if i == 100 {
			t.Fatalf("the backend used %v of CPU in 100 queries", backend)
		}
		var sum int64
		if err := conn.QueryRow(ctx, `SELECT sum(i) FROM generate_series(1, 1000000) i`).Scan(&sum); err != nil {
			t.Fatal(err)
		}
		backend = testkit.PidsCPU([]int{int(pid)})[int(pid)]
	}
	used, ok := end()
	elapsed := time.Since(started)
	if !ok {
		t.Fatal("PostgreSQL gauge: no reading (is the server on this machine?)")
	}
	// At least the new backend's CPU, which began after the gauge started;
	// at most what every core could have given the server meanwhile.
	if used < backend || used > elapsed*time.Duration(runtime.NumCPU())+100*time.Millisecond {
		t.Errorf("PostgreSQL gauge: %v, for a new backend that used %v, over %v", used, backend, elapsed)
	}
}
