package redisstore_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// linearizable runs keystoretest.Linearizable on s. redisstore needs no
// allowance: the released entry that lets a token repeat its Release is
// the key's own value, so the Claim that acquires the key replaces it (an
// earlier release mark of its own once outlived such a Claim; the
// conformance rule RepeatedReleaseIsIdempotent pins that), and the tokens
// it fences move to the key's fence set.
func linearizable(t *testing.T, s *redisstore.Store, cfg keystoretest.LinearizableConfig) keystoretest.LinearizableStats {
	t.Helper()
	return keystoretest.Linearizable(t, s, cfg)
}

// Every key's history under concurrent clients is linearizable on the
// shared Redis, with go-redis's default options; a run that misses a case
// of the contract (the machine's load slowing every call past its lease)
// runs again with longer leases.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		c := standaloneClient(t)
		s := newStore(t, c, c, cfg)
		testkit.CoverAllCases(t, keystoretest.LinearizableConfig{}, func(lc keystoretest.LinearizableConfig) (keystoretest.LinearizableStats, string) {
			st := linearizable(t, s, lc)
			return st, testkit.MissedCases(st)
		})
	})
}

// faultyClient returns a client of the Redis at addr through a testkit.Cutter,
// with short timeouts, and a Faults function for keystoretest.Linearizable
// that cuts and stalls the proxy again and again: every few hundred
// milliseconds, in turn, a cut (resets) of 20–80 ms or a stall (nothing
// forwarded) of 100–250 ms, then Restore.
func faultyClient(t *testing.T, addr string, maxRetries int) (*redis.Client, *testkit.Cutter, func(context.Context)) {
	p := newTCPProxy(t, addr)
	c := redis.NewClient(&redis.Options{
		Addr:                  p.Addr(),
		MaxRetries:            maxRetries,
		DialTimeout:           200 * time.Millisecond,
		ReadTimeout:           100 * time.Millisecond,
		WriteTimeout:          100 * time.Millisecond,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { c.Close() })
	ping(t, c, p.Addr())
	faults := func(ctx context.Context) {
		defer p.Restore()
		wait := func(lo, hi time.Duration) bool {
			tm := time.NewTimer(lo + rand.N(hi-lo))
			defer tm.Stop()
			select {
			case <-ctx.Done():
				return false
			case <-tm.C:
				return true
			}
		}
		// Cuts and stalls in turn, so that a run of a few seconds has both
		// (a coin per round left a 3 s run with 8 stalls and no cut).
		cut := false
		for wait(100*time.Millisecond, 300*time.Millisecond) {
			if cut = !cut; cut {
				p.Cut()
				wait(20*time.Millisecond, 80*time.Millisecond)
			} else {
				p.Stall()
				wait(100*time.Millisecond, 250*time.Millisecond)
			}
			p.Restore()
		}
	}
	return c, p, faults
}

// The same through a path that is cut and stalled over and over, with
// go-redis's retries off: each call is one attempt, and one that fails may
// or may not have been applied.
func TestLinearizableFaults(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		c, _, faults := faultyClient(t, standaloneAddr, -1)
		s := newStore(t, c, standaloneClient(t), cfg)
		st := linearizable(t, s, keystoretest.LinearizableConfig{Duration: 3 * time.Second, Faults: faults})
		if st.Unknown == 0 || st.Acquired == 0 {
			t.Errorf("the faults made no call's outcome unknown, or nothing was acquired: %v", st)
		}
	})
}

// The same with go-redis's default retries (MaxRetries 3): a call whose
// reply was lost is sent again, so the history is checked per attempt
// (keystoretest.LinearizableConfig.Resends). The repeats of a token's own
// work succeed; a resent Claim that finds its own first attempt holding the
// key reports it acquired, as the package documentation says. Per call,
// such a history is not always
// linearizable: a Release whose first attempt was applied, and whose resend
// comes after another Claim took the key, reports ErrLeaseLost although it
// released the key.
func TestLinearizableFaultsRetried(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		c, p, faults := faultyClient(t, standaloneAddr, 3)
		s := newStore(t, c, standaloneClient(t), cfg)
		st := linearizable(t, s, keystoretest.LinearizableConfig{Duration: 3 * time.Second, Faults: faults, Resends: true})
		// The retries hide most faults from the caller: require that live
		// connections were broken, rather than calls of unknown outcome.
		if ps := p.Stats(); ps.Severed == 0 || ps.Stalls == 0 || st.Acquired == 0 {
			t.Errorf("no connection was cut, none stalled, or nothing was acquired: %+v; %v", ps, st)
		}
	})
}

// The same on the test run's Redis Cluster, where each key's entry and its
// fence set share a slot.
func TestLinearizableCluster(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		c := clusterClient(t)
		s := newStore(t, c, c, cfg)
		st := linearizable(t, s, keystoretest.LinearizableConfig{Duration: time.Second})
		if st.Acquired == 0 || st.InFlight == 0 {
			t.Errorf("the workload missed a case: %v", st)
		}
	})
}

// The same on a Redis of the test's own whose script cache is flushed and
// whose clients' connections are killed again and again (SCRIPT FLUSH,
// CLIENT KILL TYPE normal): the store falls back from EVALSHA to EVAL, and a
// command cut off by the kill may or may not have run. go-redis's retries
// are off, so the history is checked per call.
func TestLinearizableScriptFlushAndClientKill(t *testing.T) {
	linearizableScriptFlushAndClientKill(t, func(t *testing.T) *redisServer { return privateServer(t) })
}

func linearizableScriptFlushAndClientKill(t *testing.T, start func(*testing.T) *redisServer) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		srv := start(t)
		admin := privateClient(t, srv)
		c := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, ReadTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		s := newStore(t, c, admin, cfg)
		var flushes, killed int64
		faults := func(ctx context.Context) {
			for {
				tm := time.NewTimer(30*time.Millisecond + rand.N(120*time.Millisecond))
				select {
				case <-ctx.Done():
					tm.Stop()
					return
				case <-tm.C:
				}
				actx := context.WithoutCancel(ctx)
				if err := admin.ScriptFlush(actx).Err(); err != nil {
					t.Errorf("SCRIPT FLUSH: %v", err)
					return
				}
				flushes++
				if rand.IntN(2) == 0 {
					n, err := admin.ClientKillByFilter(actx, "TYPE", "normal", "SKIPME", "yes").Result()
					if err != nil {
						t.Errorf("CLIENT KILL: %v", err)
						return
					}
					killed += n
				}
			}
		}
		st := linearizable(t, s, keystoretest.LinearizableConfig{Duration: 2 * time.Second, Faults: faults})
		t.Logf("%d script flushes, %d connections killed", flushes, killed)
		if flushes == 0 || killed == 0 || st.Acquired == 0 {
			t.Errorf("no flush, no connection killed, or nothing acquired: %v", st)
		}
	})
}
