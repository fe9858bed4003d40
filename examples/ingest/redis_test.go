package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
)

// An unusable Redis stops the service at start, as an unusable PostgreSQL
// does: nothing listening, a database index the server does not have, a
// password it refuses. The service exits 1 naming the cause, and never
// prints the URL it would serve (before, it warned, printed a dozen dial
// errors, served, and answered 503 to every request). With -redis-volatile
// too: accepting a Redis without persistence is not accepting no Redis.
func TestIngestRefusesUnusableRedis(t *testing.T) {
	closed := freePort(t) // its listener is closed: nothing listens there
	shared := testkit.SharedAddr()
	// A server of its own with a user whose password the URL gets wrong.
	own, err := testkit.StartRedis(t.Context(), testkit.RedisOptions{Args: []string{"--user", "alice", "on", ">right", "~*", "&*", "+@all"}})
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(own.Stop)
	for _, c := range []struct{ name, url, want string }{
		{"nothing listening", "redis://" + closed + "/0", "connection refused"},
		{"database 99", "redis://" + shared + "/99", "DB index is out of range"},
		{"wrong password", "redis://alice:wrong@" + own.Addr() + "/0", "WRONGPASS"},
	} {
		for _, extra := range [][]string{nil, {"-redis-volatile"}} {
			t.Run(c.name+strings.Join(extra, ""), func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				out := lineWriter{make(chan string, 16)}
				var stderr safeBuffer
				code := make(chan int, 1)
				args := append([]string{"-addr", "127.0.0.1:0", "-store", c.url}, extra...)
				go func() { code <- run(ctx, args, out, &stderr) }()
				select {
				case got := <-code:
					if got != 1 || !strings.Contains(stderr.String(), c.want) {
						t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and a line naming %q", got, stderr.String(), c.want)
					}
				case l := <-out.lines:
					cancel()
					<-code
					t.Errorf("%s: the service started on an unusable Redis: %q\nstderr:\n%s", c.url, l, stderr.String())
				case <-time.After(30 * time.Second):
					cancel()
					<-code
					t.Errorf("%s: neither served nor exited within 30 s", c.url)
				}
				if strings.Count(stderr.String(), "\n") > 3 {
					t.Errorf("%d lines on stderr, want the cause in a few:\n%s", strings.Count(stderr.String(), "\n"), stderr.String())
				}
			})
		}
	}
}
