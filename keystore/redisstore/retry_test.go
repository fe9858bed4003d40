package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// replyDropper is a go-redis Dialer whose connections, once armed, let the
// next EVALSHA (or, with cmd set, the next command named cmd) reach Redis, wait for its reply, and then break instead of
// delivering it: the command was applied, the client sees a network error
// and go-redis retries it on a new connection.
type replyDropper struct {
	cmd     string // default "evalsha"
	armed   atomic.Bool
	dropped atomic.Int32
}

func (d *replyDropper) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &droppingConn{Conn: c, d: d}, nil
}

type droppingConn struct {
	net.Conn
	d      *replyDropper
	mu     sync.Mutex
	poison bool
}

func (c *droppingConn) Write(b []byte) (int, error) {
	cmd := c.d.cmd
	if cmd == "" {
		cmd = "evalsha"
	}
	if bytes.Contains(b, []byte("\r\n"+cmd+"\r\n")) && c.d.armed.CompareAndSwap(true, false) {
		c.mu.Lock()
		c.poison = true
		c.mu.Unlock()
	}
	return c.Conn.Write(b)
}

func (c *droppingConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	poison := c.poison
	c.mu.Unlock()
	if !poison {
		return c.Conn.Read(b)
	}
	// Swallow the reply, proof that Redis ran the command, then break.
	_ = c.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Conn.Read(make([]byte, 64<<10)); err != nil {
		return 0, err
	}
	c.d.dropped.Add(1)
	c.Conn.Close()
	return 0, io.ErrUnexpectedEOF
}

// A Complete or Release that Redis applied, whose reply was lost and which
// go-redis then retried, succeeds: keystore.ErrLeaseLost keeps meaning that
// nothing changed. Before, the retry found the key completed (or gone) and
// reported the lease lost.
func TestRetriedOperationsSucceed(t *testing.T) {
	t.Parallel()
	direct := standaloneClient(t)
	d := new(replyDropper)
	client := redis.NewClient(&redis.Options{Addr: standaloneAddr, Dialer: d.dial, MaxRetries: 3})
	t.Cleanup(func() { client.Close() })
	s := newStore(t, client, direct, redisstore.Config{})
	ctx := t.Context()
	warmScripts(t, s) // so that the armed EVALSHA is the operation's only command

	key := keystoretest.Key(t)
	c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
	if err != nil || !c.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	rec := record.Record{StatusCode: 201, Header: map[string][]string{"B": {"2"}, "A": {"1"}}, Body: []byte("ok")}
	d.armed.Store(true)
	if err := s.Complete(ctx, key, c.Token, encode(rec), time.Minute); err != nil {
		t.Errorf("Complete applied, its reply lost and retried: err = %v, want nil", err)
	}
	if d.dropped.Load() != 1 {
		t.Fatalf("the reply to Complete was not dropped (%d drops); the test proves nothing", d.dropped.Load())
	}
	if r, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute); err != nil || r.State != keystore.Completed || string(testkit.Decoded(r.Record).Body) != "ok" {
		t.Fatalf("replay after the retried Complete: %v %v %q", r.State, err, testkit.Decoded(r.Record).Body)
	}

	other := keystoretest.Key(t)
	c, err = newClaim(ctx, s, other, keystore.Fingerprint{1}, time.Minute)
	if err != nil || !c.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	d.armed.Store(true)
	if err := s.Release(ctx, other, c.Token); err != nil {
		t.Errorf("Release applied, its reply lost and retried: err = %v, want nil", err)
	}
	if d.dropped.Load() != 2 {
		t.Fatalf("the reply to Release was not dropped (%d drops in all); the test proves nothing", d.dropped.Load())
	}
	if r, err := newClaim(ctx, s, other, keystore.Fingerprint{2}, time.Minute); err != nil || !r.Acquired || r.TookOver {
		t.Fatalf("claim after the retried Release: %v %v TookOver %v, want a fresh acquire", r.State, err, r.TookOver)
	}
}

// A Claim whose SET … NX GET Redis applied, whose reply was lost and which
// go-redis then retried, acquires the key: the retry finds the claim's own
// in-flight entry, the same token, and must not report it in flight to the
// claim that holds it (which would leave the key in flight for the lease).
func TestRetriedClaimAcquires(t *testing.T) {
	t.Parallel()
	direct := standaloneClient(t)
	d := &replyDropper{cmd: "set"}
	client := redis.NewClient(&redis.Options{Addr: standaloneAddr, Dialer: d.dial, MaxRetries: 3})
	t.Cleanup(func() { client.Close() })
	s := newStore(t, client, direct, redisstore.Config{})
	ctx := t.Context()
	key := keystoretest.Key(t)
	d.armed.Store(true)
	c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
	if d.dropped.Load() != 1 {
		t.Fatalf("the reply to the claim's SET was not dropped (%d drops); the test proves nothing", d.dropped.Load())
	}
	if err != nil || !c.Acquired || c.State != keystore.InFlight || c.TookOver {
		t.Fatalf("Claim applied, its reply lost and retried: acquired %v, %v, TookOver %v, %v; want it acquired", c.Acquired, c.State, c.TookOver, err)
	}
	if e, err := s.Inspect(ctx, key); err != nil || e.State != keystore.InFlight || e.Token != c.Token || e.LeaseRunOut {
		t.Fatalf("after the retried Claim: %+v %v, want in flight for the claim's token", e, err)
	}
	if err := s.Complete(ctx, key, c.Token, encode(record.Record{StatusCode: 201}), time.Minute); err != nil {
		t.Errorf("Complete with the retried claim's token: %v", err)
	}
}

// A key that begins with '}' gives its Redis key an empty hash tag, so a
// fence set could live on another Cluster slot: such keys get none. Release
// still works, since the released entry is the key's own value: repeated,
// it succeeds, and it fences its token; so does every other operation.
func TestReleaseOfKeyWithEmptyHashTagCluster(t *testing.T) {
	t.Parallel()
	client := clusterClient(t)
	s := newStore(t, client, client, redisstore.Config{})
	ctx := t.Context()
	for range 5 {
		key := "}{" + keystoretest.Key(t)[:16]
		c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil || !c.Acquired {
			t.Fatalf("Claim(%q): %v %v", key, c.State, err)
		}
		if _, err := s.Extend(ctx, key, c.Token, time.Minute); err != nil {
			t.Fatalf("Extend(%q): %v", key, err)
		}
		if err := s.Release(ctx, key, c.Token); err != nil {
			t.Fatalf("Release(%q): %v", key, err)
		}
		if err := s.Release(ctx, key, c.Token); err != nil {
			t.Fatalf("repeated Release(%q): %v", key, err)
		}
		if again, err := claimWith(ctx, s, key, keystore.Fingerprint{1}, time.Minute, c.Token); !errors.Is(err, keystore.ErrLeaseLost) || again.Acquired {
			t.Fatalf("Claim(%q) with the released token: acquired %v, %v; want ErrLeaseLost", key, again.Acquired, err)
		}
		if c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute); err != nil || !c.Acquired || c.TookOver {
			t.Fatalf("claim after Release(%q): %v %v TookOver %v", key, c.State, err, c.TookOver)
		}
	}
}
