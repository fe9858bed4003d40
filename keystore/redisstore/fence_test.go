package redisstore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// The store's side of claims whose outcome is unknown (keystore, "Claims
// whose outcome is unknown"): a Claim that Redis
// applied but whose reply was lost leaves the key held by the caller's
// token, and the caller's Release by that token frees it at once; a Claim
// that reaches Redis only after its caller's Release, having sat on its
// way while the caller gave up, acquires nothing.

// waitFor bounds the waits of these tests on a condition of the store.
const waitFor = 10 * time.Second

// eventually polls cond until it holds, failing t after waitFor.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(waitFor); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s never happened", waitFor, what)
		}
	}
}

// claimWith claims key for tok.
func claimWith(ctx context.Context, s keystore.Store, key string, fp keystore.Fingerprint, lease time.Duration, tok keystore.Token) (keystore.Claim, error) {
	return s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: lease, Token: tok})
}

// leaseRunOut waits until key's entry is in flight with its lease run out,
// by the Redis server's clock.
func leaseRunOut(t *testing.T, s *redisstore.Store, key string) {
	t.Helper()
	eventually(t, "the lease of "+key[:8]+"… running out", func() bool {
		e, err := s.Inspect(t.Context(), key)
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		return e.State == keystore.InFlight && e.LeaseRunOut
	})
}

// notHeldBy fails t if key is held by tok.
func notHeldBy(t *testing.T, s *redisstore.Store, key string, tok keystore.Token, what string) {
	t.Helper()
	e, err := s.Inspect(t.Context(), key)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if e.State == keystore.InFlight && e.Token == tok {
		t.Fatalf("%s: the key is held by the released token: %+v", what, e)
	}
}

// A Claim that Redis applied, whose reply the connection lost (it broke
// after the command was written and run), fails for its caller with an
// error that is not ErrLeaseLost, and leaves the key held by the caller's
// token for the whole lease: every other claimant finds it in flight. The
// caller's Release by its token frees it at once, and fences the token: a
// resend of the lost Claim acquires nothing. Through each way a Claim can
// acquire: the plain SET … NX GET on an absent key, and the claim script
// on a released key and on a key whose lease ran out.
func TestClaimWithLostReplyReleasedByToken(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		direct := standaloneClient(t)
		for _, tc := range []struct {
			name    string
			cmd     string // the command whose reply is lost
			prepare func(t *testing.T, rival *redisstore.Store, key string)
		}{
			{"AbsentKey", "set", func(*testing.T, *redisstore.Store, string) {}},
			{"ReleasedKey", "evalsha", func(t *testing.T, rival *redisstore.Store, key string) {
				c, err := newClaim(t.Context(), rival, key, keystore.Fingerprint{9}, time.Minute)
				if err != nil || !c.Acquired {
					t.Fatalf("earlier Claim: %v %v", c.State, err)
				}
				if err := rival.Release(t.Context(), key, c.Token); err != nil {
					t.Fatalf("earlier Release: %v", err)
				}
			}},
			{"LeaseRanOut", "evalsha", func(t *testing.T, rival *redisstore.Store, key string) {
				c, err := newClaim(t.Context(), rival, key, keystore.Fingerprint{9}, 50*time.Millisecond)
				if err != nil || !c.Acquired {
					t.Fatalf("earlier Claim: %v %v", c.State, err)
				}
				leaseRunOut(t, rival, key)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				d := &replyDropper{cmd: tc.cmd}
				client := redis.NewClient(&redis.Options{Addr: standaloneAddr, Dialer: d.dial, MaxRetries: -1})
				t.Cleanup(func() { client.Close() })
				s := newStore(t, client, direct, cfg)
				rival, err := redisstore.New(direct, redisstore.Config{KeyPrefix: prefixOf(s), Durability: redisstore.AcceptVolatile})
				if err != nil {
					t.Fatal(err)
				}
				ctx := t.Context()
				warmClaimScript(t, s)
				key := keystoretest.Key(t)
				tc.prepare(t, rival, key)

				tok := keystore.NewToken()
				fp := keystore.Fingerprint{1}
				d.armed.Store(true)
				c, err := claimWith(ctx, s, key, fp, time.Minute, tok)
				if d.dropped.Load() != 1 {
					t.Fatalf("the reply to the claim's %s was not dropped (%d drops); the test proves nothing", tc.cmd, d.dropped.Load())
				}
				if err == nil || errors.Is(err, keystore.ErrLeaseLost) {
					t.Fatalf("Claim whose reply was lost: acquired %v, %v; want an error of unknown outcome", c.Acquired, err)
				}
				// Redis applied it: the key is held by the caller's token,
				// and would stay so for the minute of its lease.
				if e, err := s.Inspect(ctx, key); err != nil || e.State != keystore.InFlight || e.Token != tok || e.LeaseRunOut {
					t.Fatalf("after the Claim whose reply was lost: %+v %v; want it held by the claim's token", e, err)
				}
				if in, err := newClaim(ctx, rival, key, keystore.Fingerprint{2}, time.Minute); err != nil || in.Acquired || in.State != keystore.InFlight {
					t.Fatalf("another Claim before the Release: acquired %v, %v, %v; want in flight", in.Acquired, in.State, err)
				}

				// The caller releases by its token, whatever ended its Claim.
				if err := s.Release(ctx, key, tok); err != nil {
					t.Fatalf("Release by the token of the applied Claim: %v", err)
				}
				// The token is fenced: a resend of the lost Claim acquires
				// nothing.
				if again, err := claimWith(ctx, s, key, fp, time.Minute, tok); !errors.Is(err, keystore.ErrLeaseLost) || again.Acquired {
					t.Fatalf("the lost Claim resent after the Release: acquired %v, %v; want ErrLeaseLost", again.Acquired, err)
				}
				// The key is free at once, not when the lease runs out.
				next, err := newClaim(ctx, rival, key, keystore.Fingerprint{3}, time.Minute)
				if err != nil || !next.Acquired || next.TookOver {
					t.Fatalf("Claim right after the Release: acquired %v (took over %v), %v; want the released key acquired", next.Acquired, next.TookOver, err)
				}
			})
		}
	})
}

// warmClaimScript makes sure Redis has the claim and release scripts
// cached, so that the command a test holds or drops is EVALSHA's only run.
func warmClaimScript(t *testing.T, s *redisstore.Store) {
	t.Helper()
	ctx := t.Context()
	key := keystoretest.Key(t)
	c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
	if err != nil || !c.Acquired {
		t.Fatalf("warm-up Claim: %v %v", c.State, err)
	}
	if _, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute); err != nil {
		t.Fatalf("warm-up Claim in flight: %v", err)
	}
	if err := s.Release(ctx, key, c.Token); err != nil {
		t.Fatalf("warm-up Release: %v", err)
	}
}

// commandHolder is a go-redis Dialer whose connections, once armed, hold
// the next write that carries the command named cmd: the bytes are not
// sent, the write reports success, and the read of its reply fails at
// once with a timeout, as if the caller's deadline had passed while the
// command sat in a stalled server. Deliver later sends the held bytes to
// Redis on their own connection, reads Redis's reply and closes it: the
// command reaches Redis after whatever the test did meanwhile.
type commandHolder struct {
	cmd   string
	armed atomic.Bool
	held  chan *holdingConn
}

// newCommandHolder returns a holder of cmd whose held command, if the test
// ends without delivering it, is dropped with its connection.
func newCommandHolder(t *testing.T, cmd string) *commandHolder {
	h := &commandHolder{cmd: cmd, held: make(chan *holdingConn, 1)}
	t.Cleanup(func() {
		select {
		case c := <-h.held:
			c.Conn.Close()
		default:
		}
	})
	return h
}

func (h *commandHolder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &holdingConn{Conn: c, h: h}, nil
}

type holdingConn struct {
	net.Conn
	h *commandHolder

	mu      sync.Mutex
	pending []byte // the held write, until Deliver
}

func (c *holdingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	holding := c.pending != nil
	c.mu.Unlock()
	if holding {
		return 0, net.ErrClosed // nothing may overtake the held command
	}
	if bytes.Contains(b, []byte("\r\n"+c.h.cmd+"\r\n")) && c.h.armed.CompareAndSwap(true, false) {
		c.mu.Lock()
		c.pending = bytes.Clone(b)
		c.mu.Unlock()
		c.h.held <- c
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *holdingConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	holding := c.pending != nil
	c.mu.Unlock()
	if holding {
		return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	}
	return c.Conn.Read(b)
}

// Close leaves a connection that holds a command open for Deliver.
func (c *holdingConn) Close() error {
	c.mu.Lock()
	holding := c.pending != nil
	c.mu.Unlock()
	if holding {
		return nil
	}
	return c.Conn.Close()
}

// Deliver sends the held command to Redis and returns Redis's reply, as
// RESP text without its line ends (":-1", "$…" with the bulk string, "_"
// for null), then closes the connection.
func (h *commandHolder) Deliver(t *testing.T) string {
	t.Helper()
	var c *holdingConn
	select {
	case c = <-h.held:
	case <-time.After(waitFor):
		t.Fatalf("no %s was written within %v: nothing to deliver", h.cmd, waitFor)
	}
	c.mu.Lock()
	b := c.pending
	c.mu.Unlock()
	defer c.Conn.Close()
	if err := c.Conn.SetDeadline(time.Now().Add(waitFor)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Conn.Write(b); err != nil {
		t.Fatalf("delivering the held %s: %v", h.cmd, err)
	}
	reply, err := readReply(bufio.NewReader(c.Conn))
	if err != nil {
		t.Fatalf("reading Redis's reply to the held %s: %v", h.cmd, err)
	}
	return reply
}

// readReply reads one RESP2 or RESP3 reply of the kinds the store's
// commands get (simple string, error, integer, bulk string, null, array),
// rendered as its type byte and payload, an array's elements in brackets.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("malformed reply line %q", line)
	}
	line = line[:len(line)-2]
	switch line[0] {
	case '+', '-', ':', '_', ',', '#':
		return line, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "_", err // RESP2's null bulk string
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return "$" + string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "_", err
		}
		out := "*["
		for i := range n {
			el, err := readReply(r)
			if err != nil {
				return "", err
			}
			if i > 0 {
				out += " "
			}
			out += el
		}
		return out + "]", nil
	}
	return "", fmt.Errorf("unexpected reply type in %q", line)
}

// A Claim that reaches Redis only after its caller's Release(token) (it
// sat on its way while the caller gave up, and released the key by its
// token as the middleware does) acquires nothing, whatever happened to the
// key in between, as long as the fence lasts (a minute): on an absent key;
// on a key another token had released; on one held by another token that
// released it meanwhile, or whose lease ran out meanwhile; and on a
// released key that a third token claimed and released, or left to run
// out, meanwhile. The delayed command is the plain SET … NX GET when the
// key was absent, and the claim script otherwise (the SET's reply, a key
// in flight or released, sends the Claim to the script).
func TestClaimDelayedPastReleaseIsFenced(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		direct := standaloneClient(t)
		const short = 50 * time.Millisecond
		type env struct {
			t     *testing.T
			s     *redisstore.Store // the caller's store
			rival *redisstore.Store // everyone else's, on its own client
			key   string
		}
		// claim and release are other tokens' calls through rival.
		claim := func(e env, lease time.Duration) keystore.Token {
			e.t.Helper()
			c, err := newClaim(e.t.Context(), e.rival, e.key, keystore.Fingerprint{9}, lease)
			if err != nil || !c.Acquired {
				e.t.Fatalf("another token's Claim: acquired %v, %v, %v", c.Acquired, c.State, err)
			}
			return c.Token
		}
		release := func(e env, tok keystore.Token) {
			e.t.Helper()
			if err := e.rival.Release(e.t.Context(), e.key, tok); err != nil {
				e.t.Fatalf("another token's Release: %v", err)
			}
		}
		for _, tc := range []struct {
			name   string
			cmd    string    // the Claim's command that is held: "set" or "evalsha"
			before func(env) // the key before the Claim
			after  func(env) // what happens to it between the caller's Release and the Claim's arrival
			want   string    // Redis's reply to the delayed command
		}{
			{name: "AbsentKey", cmd: "set", before: func(env) {}, after: func(env) {}},
			{name: "AbsentKeyClaimedAndReleasedMeanwhile", cmd: "set", before: func(env) {},
				after: func(e env) { release(e, claim(e, time.Minute)) }},
			{name: "ReleasedKey", cmd: "evalsha", want: ":-1",
				before: func(e env) { release(e, claim(e, time.Minute)) }, after: func(env) {}},
			{name: "ReleasedKeyClaimedAndReleasedMeanwhile", cmd: "evalsha", want: ":-1",
				before: func(e env) { release(e, claim(e, time.Minute)) },
				after:  func(e env) { release(e, claim(e, time.Minute)) }},
			{name: "ReleasedKeyClaimedAndRunOutMeanwhile", cmd: "evalsha", want: ":-1",
				before: func(e env) { release(e, claim(e, time.Minute)) },
				after:  func(e env) { claim(e, short); leaseRunOut(e.t, e.rival, e.key) }},
			{name: "HeldKeyReleasedMeanwhile", cmd: "evalsha", want: ":-1",
				before: func(e env) { claim(e, time.Minute) },
				after: func(e env) {
					en, err := e.rival.Inspect(e.t.Context(), e.key)
					if err != nil || en.State != keystore.InFlight {
						e.t.Fatalf("Inspect: %+v %v", en, err)
					}
					release(e, en.Token)
				}},
			{name: "HeldKeyRunOutMeanwhile", cmd: "evalsha", want: ":-1",
				before: func(e env) { claim(e, short) },
				after:  func(e env) { leaseRunOut(e.t, e.rival, e.key) }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := newCommandHolder(t, tc.cmd)
				client := redis.NewClient(&redis.Options{Addr: standaloneAddr, Dialer: h.dial, MaxRetries: -1})
				t.Cleanup(func() { client.Close() })
				s := newStore(t, client, direct, cfg)
				rival, err := redisstore.New(direct, redisstore.Config{KeyPrefix: prefixOf(s), Durability: redisstore.AcceptVolatile})
				if err != nil {
					t.Fatal(err)
				}
				ctx := t.Context()
				warmClaimScript(t, s)
				e := env{t: t, s: s, rival: rival, key: keystoretest.Key(t)}
				tc.before(e)

				tok := keystore.NewToken()
				h.armed.Store(true)
				c, err := claimWith(ctx, s, e.key, keystore.Fingerprint{1}, time.Minute, tok)
				if err == nil || errors.Is(err, keystore.ErrLeaseLost) {
					t.Fatalf("Claim whose command was held: acquired %v, %v; want an error of unknown outcome", c.Acquired, err)
				}
				// The caller gives up and releases by its token: the Claim
				// has not reached Redis, so the token holds nothing.
				if err := s.Release(ctx, e.key, tok); !errors.Is(err, keystore.ErrLeaseLost) {
					t.Fatalf("Release by the token of a Claim that has not arrived: %v, want ErrLeaseLost", err)
				}
				tc.after(e)

				reply := h.Deliver(t)
				t.Logf("Redis's reply to the delayed %s: %.60q", tc.cmd, reply)
				switch {
				case tc.want != "" && reply != tc.want:
					t.Errorf("the delayed claim script answered %.60q, want %s (the token is fenced)", reply, tc.want)
				case tc.cmd == "set" && (len(reply) < 2 || reply[:2] != "$r"):
					t.Errorf("the delayed SET … NX GET answered %.60q, want the key's released entry (it must find the key present)", reply)
				}
				notHeldBy(t, s, e.key, tok, "after the delayed Claim arrived")
				// The key stays free for every other token.
				next, err := newClaim(ctx, rival, e.key, keystore.Fingerprint{3}, time.Minute)
				if err != nil || !next.Acquired {
					t.Fatalf("another Claim after the delayed one: acquired %v, %v, %v; want the key acquired", next.Acquired, next.State, err)
				}
				// And the caller's token stays fenced.
				if again, err := claimWith(ctx, s, e.key, keystore.Fingerprint{1}, time.Minute, tok); err != nil && !errors.Is(err, keystore.ErrLeaseLost) || again.Acquired {
					t.Fatalf("the released token's Claim again: acquired %v, %v", again.Acquired, err)
				}
			})
		}
	})
}

// A Claim repeated with its token after that token's lease ran out (a
// client library's resend that came late) does not report the key
// acquired on the lease that ran out: it takes the key over, as any Claim
// of an expired lease would, with a fresh lease that Extend can renew.
func TestClaimRepeatedAfterLeaseRanOut(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, cfg redisstore.Config) {
		client := standaloneClient(t)
		s := newStore(t, client, client, cfg)
		ctx := t.Context()
		key := keystoretest.Key(t)
		tok := keystore.NewToken()
		if c, err := claimWith(ctx, s, key, keystore.Fingerprint{1}, 50*time.Millisecond, tok); err != nil || !c.Acquired {
			t.Fatalf("Claim: %v %v", c.State, err)
		}
		leaseRunOut(t, s, key)
		c, err := claimWith(ctx, s, key, keystore.Fingerprint{1}, time.Minute, tok)
		if err != nil || !c.Acquired || !c.TookOver {
			t.Fatalf("Claim repeated after its lease ran out: acquired %v, took over %v, %v; want it taken over", c.Acquired, c.TookOver, err)
		}
		e, err := s.Inspect(ctx, key)
		if err != nil || e.State != keystore.InFlight || e.Token != tok || e.LeaseRunOut || e.LeaseRemaining < 30*time.Second {
			t.Fatalf("after the repeated Claim: %+v %v; want it held by the token with a fresh lease of a minute", e, err)
		}
		if left, err := s.Extend(ctx, key, tok, time.Minute); err != nil || left <= 0 {
			t.Fatalf("Extend after the repeated Claim: %v, %v", left, err)
		}
	})
}
