package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

func postgresURL() string {
	return testkit.SharedPostgresURL()
}

// keysStore is a store the keys tests run against, and the -store flags
// that name it to the command.
type keysStore struct {
	name  string
	store keystore.Store
	flags []string
}

func keysStores(t *testing.T) []keysStore {
	suffix := fmt.Sprintf("%x", rand.Uint64())
	client := redis.NewClient(&redis.Options{Addr: testkit.SharedAddr(), MaintNotificationsConfig: quiet})
	t.Cleanup(func() { client.Close() })
	prefix := "geoidem-cli-" + suffix + ":"
	rs, err := redisstore.New(client, redisstore.Config{KeyPrefix: prefix, Durability: redisstore.AcceptVolatile, Eviction: redisstore.SkipEvictionCheck})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := testkit.DeletePrefix(context.Background(), client, prefix); err != nil {
			t.Errorf("deleting the keys under %s: %v", prefix, err)
		}
	})

	pool, err := pgxpool.New(t.Context(), postgresURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	table := "geoidem_cli_" + suffix
	ps, err := pgstore.New(t.Context(), pool, pgstore.Config{Table: table, PruneInterval: -1})
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", postgresURL(), err)
	}
	t.Cleanup(func() {
		ps.Close()
		if err := pgstore.Drop(context.Background(), pool, pgstore.Config{Table: table}); err != nil {
			t.Error(err)
		}
	})
	return []keysStore{
		{"redis", rs, []string{"-store", testkit.SharedURL(), "-redis-prefix", prefix}},
		{"postgres", ps, []string{"-store", postgresURL(), "-pg-key-table", table}},
	}
}

// post delivers body under key to url, and returns the status and whether
// it was a replay.
func post(t *testing.T, url, key string) (int, bool) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/features", strings.NewReader(`{"type":"Feature","id":"`+strings.Trim(key, `"`)+`","geometry":null,"properties":null}`))
	req.Header.Set("Content-Type", "application/geo+json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true"
}

// keysCmd runs `geoidem keys SUB` with the store's flags and args.
func keysCmd(t *testing.T, st keysStore, stdin, sub string, args ...string) (int, string) {
	t.Helper()
	code, out, errs := geoidem(t, stdin, append(append([]string{"keys", sub}, st.flags...), args...)...)
	return code, out + errs
}

func expect(t *testing.T, what string, code int, out string, wantCode int, wants ...string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("%s: exit %d, want %d\n%s", what, code, wantCode, out)
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s: no %q in\n%s", what, w, out)
		}
	}
}

// TestKeys runs `geoidem keys` as a process against real Redis and
// PostgreSQL stores that a receiver in this test writes to: get, release
// (refused while the lease runs, done once it ran out, or forced), forget
// (asked first) and stats.
func TestKeys(t *testing.T) {
	for _, st := range keysStores(t) {
		t.Run(st.name, func(t *testing.T) {
			url := serve(t, wrap(t, st.store, new(feature)))
			if code, replayed := post(t, url, "k1"); code != http.StatusCreated || replayed {
				t.Fatalf("POST k1: %d replayed=%t", code, replayed)
			}
			code, out := keysCmd(t, st, "", "get", "k1")
			expect(t, "get k1", code, out, 0, `key "k1" in scope "POST /features"`, "completed: status 201", "header: Content-Type: application/json", "fingerprint: ")
			code, out = keysCmd(t, st, "", "get", "-json", "k1")
			expect(t, "get -json k1", code, out, 0, `"state": "completed"`, `"status": 201`, `"stored_key": "`+middleware.StoreKey("POST /features", "k1")+`"`)
			code, out = keysCmd(t, st, "", "get", "nobody")
			expect(t, "get nobody", code, out, 1, "absent", "-scope", "-store")

			// One key, quoted (an RFC 9651 string, as the Idempotency-Key
			// draft sends it) or bare: the middleware parses it once, and
			// so does the command.
			if code, _ := post(t, url, `"evt-9"`); code != http.StatusCreated {
				t.Fatalf(`POST "evt-9": %d`, code)
			}
			for _, arg := range []string{`"evt-9"`, "evt-9"} {
				code, out = keysCmd(t, st, "", "get", arg)
				expect(t, "get "+arg, code, out, 0, `key "evt-9" in scope "POST /features"`, "completed: status 201")
			}
			code, out = keysCmd(t, st, "", "get", `"evt-9`)
			expect(t, `get "evt-9 (unterminated)`, code, out, 2, "malformed")

			// A key a dead request holds, with a long lease: refused, then forced.
			stuck := middleware.StoreKey("POST /features", "k2")
			if _, err := st.store.Claim(t.Context(), stuck, keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Hour, Token: keystore.NewToken()}); err != nil {
				t.Fatal(err)
			}
			code, out = keysCmd(t, st, "", "get", "k2")
			expect(t, "get k2", code, out, 0, "in flight", "of its lease left")
			if code, _ := post(t, url, "k2"); code == http.StatusCreated {
				t.Errorf("POST k2 while it is held: %d, want it refused", code)
			}
			code, out = keysCmd(t, st, "", "release", "k2")
			expect(t, "release k2", code, out, 1, "not released", "lease still runs", "-force")
			code, out = keysCmd(t, st, "", "release", "-force", "k2")
			expect(t, "release -force k2", code, out, 0, "released", "-force freed it")
			if code, replayed := post(t, url, "k2"); code != http.StatusCreated || replayed {
				t.Errorf("POST k2 after the release: %d replayed=%t, want a fresh 201", code, replayed)
			}

			// A key whose lease runs out: released without -force.
			short := middleware.StoreKey("POST /features", "k3")
			if _, err := st.store.Claim(t.Context(), short, keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: 200 * time.Millisecond, Token: keystore.NewToken()}); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				if _, out := keysCmd(t, st, "", "get", "k3"); strings.Contains(out, "lease ran out") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("k3's lease never ran out, as get shows it")
				}
			}
			code, out = keysCmd(t, st, "", "release", "k3")
			expect(t, "release k3", code, out, 0, "released", "its lease had run out")
			code, out = keysCmd(t, st, "", "get", "k3")
			expect(t, "get k3", code, out, 1, "absent")

			// A completed record is never released, and forgotten only when confirmed.
			code, out = keysCmd(t, st, "", "release", "-force", "k1")
			expect(t, "release k1", code, out, 1, "not released", "never released", "forget")
			code, out = keysCmd(t, st, "n\n", "forget", "k1")
			expect(t, "forget k1, answered n", code, out, 1, "forget this record?", "not forgotten")
			if code, replayed := post(t, url, "k1"); code != http.StatusCreated || !replayed {
				t.Errorf("POST k1 after a declined forget: %d replayed=%t, want the replay", code, replayed)
			}
			code, out = keysCmd(t, st, "y\n", "forget", "k1")
			expect(t, "forget k1, answered y", code, out, 0, "forgot", "status 201")
			if code, replayed := post(t, url, "k1"); code != http.StatusCreated || replayed {
				t.Errorf("POST k1 after forget: %d replayed=%t, want it run again", code, replayed)
			}
			code, out = keysCmd(t, st, "", "forget", "-yes", "nobody")
			expect(t, "forget nobody", code, out, 1, "not forgotten", "absent")

			code, out = keysCmd(t, st, "", "stats")
			expect(t, "stats", code, out, 0, "in flight: 0 (0 with their lease run out)", "completed: 3", "oldest: ")
			code, out = keysCmd(t, st, "", "stats", "-json")
			expect(t, "stats -json", code, out, 0, `"completed": 3`, `"in_flight": 0`)
		})
	}
}

// TestKeysAbsentSaysWhereToLook: a key the store does not hold is most
// often a key looked up in the wrong scope or on the wrong store, not one
// that never arrived: get says so, names both flags, and exits 1, as
// release and forget of such a key do.
func TestKeysAbsentSaysWhereToLook(t *testing.T) {
	st := keysStores(t)[0]
	url := serve(t, wrap(t, st.store, new(feature)))
	if code, _ := post(t, url, "k1"); code != http.StatusCreated {
		t.Fatalf("POST k1: %d", code)
	}
	for _, c := range []struct {
		what string
		args []string
	}{
		{"get in another scope", []string{"get", "-scope", "POST /other", "k1"}},
		{"get -json in another scope", []string{"get", "-json", "-scope", "POST /other", "k1"}},
		{"get of a key never sent", []string{"get", "never-sent"}},
		{"release in another scope", []string{"release", "-scope", "POST /other", "k1"}},
		{"forget in another scope", []string{"forget", "-yes", "-scope", "POST /other", "k1"}},
	} {
		code, out := keysCmd(t, st, "", c.args[0], c.args[1:]...)
		expect(t, c.what, code, out, 1, "absent", "check -scope", "-store")
	}
	// Under its own scope, the key is found, and the hint is not printed.
	code, out := keysCmd(t, st, "", "get", "k1")
	expect(t, "get k1", code, out, 0, "completed")
	if strings.Contains(out, "check -scope") {
		t.Errorf("get k1 found the key and still says to check the flags:\n%s", out)
	}
}

func TestKeysUsage(t *testing.T) {
	for _, args := range [][]string{
		{"keys"},
		{"keys", "nonsense"},
		{"keys", "get", "k"}, // no -store
		{"keys", "get", "-store", "redis://127.0.0.1:6379/0"},               // no key
		{"keys", "stats", "-store", "memcached://x"},                        // unknown store
		{"keys", "stats", "-store", "redis://127.0.0.1:1/0"},                // unreachable
		{"keys", "get", "-store", "http://127.0.0.1:1", "k"},                // unreachable admin listener
		{"keys", "release", "-store", "redis://127.0.0.1:6379/0", "a", "b"}, // two keys
	} {
		if code, out, errs := geoidem(t, "", args...); code != 2 {
			t.Errorf("geoidem %q: exit %d, want 2\n%s%s", args, code, out, errs)
		}
	}
}
