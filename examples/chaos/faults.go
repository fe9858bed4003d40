package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// storeFault is one store or receiver fault, fired when the first pass has
// finished at deliveries.
type storeFault struct {
	at   int
	name string
	do   func(ctx context.Context) error
}

// plannedFaults returns the store and receiver faults of a run, each at a
// seeded point of the first pass (between 10% and 85% of the deliveries),
// in the order they fire.
func plannedFaults(o options, st *storeSetup, kids *child, redis *testkit.RedisServer, fo *failover, rep *report, deliveries int) []storeFault {
	var fs []storeFault
	if o.storeFaults && st.cut != nil {
		cutFor := cmp.Or(o.cutFor, cutFor)
		for range 2 {
			fs = append(fs, storeFault{name: "cut", do: func(ctx context.Context) error {
				st.cut.Cut()
				t := time.NewTimer(cutFor)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
				st.cut.Restore()
				return nil
			}})
		}
	}
	if o.storeFaults && st.kind == postgresStore {
		for range 3 {
			fs = append(fs, storeFault{name: "pg_terminate_backend", do: func(ctx context.Context) error {
				n, err := st.terminate(ctx)
				rep.terminations++
				rep.terminated += n
				return err
			}})
		}
	}
	if o.stallFor > 0 && st.cut != nil {
		fs = append(fs, storeFault{name: "stall", do: func(ctx context.Context) error {
			st.cut.Stall()
			t := time.NewTimer(o.stallFor)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			st.cut.Restore()
			rep.stalls++
			return nil
		}})
	}
	for range o.pgTerminate {
		fs = append(fs, storeFault{name: "pg_terminate_backend", do: func(ctx context.Context) error {
			n, err := st.terminate(ctx)
			rep.terminations++
			rep.terminated += n
			return err
		}})
	}
	for range o.killReceiver {
		fs = append(fs, storeFault{name: "SIGKILL", do: kids.kill})
	}
	if redis != nil {
		for range o.restartRedis {
			fs = append(fs, storeFault{name: "Redis restart", do: func(ctx context.Context) error {
				rep.restarts++
				return redis.Restart(ctx)
			}})
		}
	}
	if fo != nil {
		fs = append(fs, storeFault{name: "failover", do: func(ctx context.Context) error {
			rep.failovers++
			return fo.run(ctx)
		}})
	}
	rng := rand.New(rand.NewPCG(o.seed, 0xfa17))
	rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	ats := make([]int, len(fs))
	for i := range ats {
		ats[i] = deliveries/10 + rng.IntN(max(1, deliveries*3/4))
	}
	slices.Sort(ats)
	for i := range fs {
		fs[i].at = ats[i]
	}
	return fs
}

// fire runs each fault once the first pass has finished its at
// deliveries. It fires every fault, so that the counts in the table are
// the counts asked for, and returns the first error.
func fire(ctx context.Context, fs []storeFault, done *atomic.Int64) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for _, f := range fs {
		for done.Load() < int64(f.at) {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := f.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}
