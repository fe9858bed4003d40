package redisstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// outageTimeout is the client timeout of the outage tests, and outageBound
// the longest a store call may take while Redis is unreachable: generous,
// because the machine is shared.
const (
	outageTimeout = 200 * time.Millisecond
	outageBound   = 2500 * time.Millisecond // generous for a loaded machine; a hang on go-redis defaults (3 s reads, 5 s dials) still fails
)

// outageClient returns a client that reaches Redis through addr (a proxy),
// with short timeouts and without go-redis's own retries, as the package
// documentation recommends for a store that must fail fast.
func outageClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		DialTimeout:           outageTimeout,
		ReadTimeout:           outageTimeout,
		WriteTimeout:          outageTimeout,
		PoolTimeout:           outageTimeout,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// With Redis cut off, every operation fails within a bound of the client's
// timeouts with an error that is not ErrLeaseLost (so the middleware answers
// 503 and runs nothing); once Redis is back, operations succeed and the
// entries written before the outage are intact.
func TestOutage(t *testing.T) {
	t.Parallel()
	direct := standaloneClient(t)
	for _, mode := range []struct {
		name      string
		breakPath func(*testkit.Cutter)
	}{
		{"Cut", (*testkit.Cutter).Cut},
		{"Stall", (*testkit.Cutter).Stall},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			proxy := newTCPProxy(t, standaloneAddr)
			s := newStore(t, outageClient(t, proxy.Addr()), direct, redisstore.Config{})
			ctx := t.Context()
			fp := keystore.Fingerprint{7}
			held := keystoretest.Key(t)
			c, err := newClaim(ctx, s, held, fp, time.Minute)
			if err != nil || !c.Acquired {
				t.Fatalf("Claim before the outage: %v %v", c.State, err)
			}
			done := keystoretest.Key(t)
			d, err := newClaim(ctx, s, done, fp, time.Minute)
			if err != nil || !d.Acquired {
				t.Fatalf("Claim before the outage: %v %v", d.State, err)
			}
			if err := s.Complete(ctx, done, d.Token, encode(record.Record{StatusCode: 201, Body: []byte("before")}), time.Hour); err != nil {
				t.Fatalf("Complete before the outage: %v", err)
			}

			mode.breakPath(proxy)
			ops := []struct {
				name string
				fn   func(context.Context) error
			}{
				{"Claim of a new key", func(ctx context.Context) error {
					_, err := newClaim(ctx, s, keystoretest.Key(t), fp, time.Minute)
					return err
				}},
				{"Claim of a completed key", func(ctx context.Context) error {
					_, err := newClaim(ctx, s, done, fp, time.Minute)
					return err
				}},
				{"Extend", func(ctx context.Context) error { return extend(ctx, s, held, c.Token, time.Minute) }},
				{"Complete", func(ctx context.Context) error {
					return s.Complete(ctx, held, c.Token, encode(record.Record{StatusCode: 200}), time.Hour)
				}},
				{"Release", func(ctx context.Context) error { return s.Release(ctx, held, c.Token) }},
			}
			var slowest time.Duration
			var sample error
			for range 3 { // fresh dials as well as pooled connections
				for _, op := range ops {
					start := time.Now()
					err := op.fn(ctx)
					elapsed := time.Since(start)
					slowest, sample = max(slowest, elapsed), err
					switch {
					case err == nil:
						t.Errorf("%s succeeded with Redis unreachable", op.name)
					case errors.Is(err, keystore.ErrLeaseLost):
						t.Errorf("%s with Redis unreachable: %v; an outage must not look like a lost lease", op.name, err)
					case !wrapsNetworkCause(err):
						t.Errorf("%s with Redis unreachable: %v (%T) does not wrap the network error behind it", op.name, err, err)
					}
					if elapsed > outageBound {
						t.Errorf("%s with Redis unreachable took %v, more than %v (client timeouts %v)", op.name, elapsed, outageBound, outageTimeout)
					}
				}
			}
			t.Logf("slowest failing call %v (bound %v); last error: %v", slowest, outageBound, sample)
			// A deadline shorter than the client's timeouts bounds the call
			// too (ContextTimeoutEnabled), and the error says so.
			short, cancel := context.WithTimeout(ctx, outageTimeout/4)
			start := time.Now()
			_, err = newClaim(short, s, keystoretest.Key(t), fp, time.Minute)
			cancel()
			if elapsed := time.Since(start); err == nil || elapsed > outageBound {
				t.Errorf("Claim with a %v deadline during the outage: %v after %v", outageTimeout/4, err, elapsed)
			}

			proxy.Restore()
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err := newClaim(ctx, s, keystoretest.Key(t), fp, time.Minute)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("store still failing 10s after Redis came back: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// Nothing the failed calls attempted took effect, and the
			// entries from before the outage are intact.
			in, err := newClaim(ctx, s, held, keystore.Fingerprint{8}, time.Minute)
			if err != nil || in.Acquired || in.State != keystore.InFlight || in.Fingerprint != fp {
				t.Fatalf("Claim of the held key after the outage: %v %v %x", in.State, err, in.Fingerprint[:1])
			}
			if err := s.Complete(ctx, held, c.Token, encode(record.Record{StatusCode: 202}), time.Hour); err != nil {
				t.Fatalf("Complete by the holder after the outage: %v", err)
			}
			r, err := newClaim(ctx, s, done, fp, time.Minute)
			if err != nil || r.State != keystore.Completed || string(testkit.Decoded(r.Record).Body) != "before" {
				t.Fatalf("replay after the outage: %v %v %q", r.State, err, testkit.Decoded(r.Record).Body)
			}
		})
	}
}

// wrapsNetworkCause reports whether err wraps the network failure (a
// net.Error such as a timeout, or EOF from a closed connection) or the
// context deadline that caused it.
func wrapsNetworkCause(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, context.DeadlineExceeded)
}
