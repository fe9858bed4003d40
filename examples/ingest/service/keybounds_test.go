package service

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
)

// postAs posts a small valid feature of its own id under key, from the
// remote address ip, with the webhook headers h if any.
func postAs(h http.Handler, ip, key string) *httptest.ResponseRecorder {
	body := `{"type":"Feature","id":"` + key + `","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":{"n":1}}`
	r := httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/geo+json")
	r.Header.Set("Idempotency-Key", key)
	r.RemoteAddr = ip + ":4000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// The flip side of the store fill, on the service's defaults: the only sender of a
// memory-mode receiver stores 100,000 keys without a refusal.
func TestLoneSenderFillsTheMemoryStore(t *testing.T) {
	svc, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	h := svc.Handler()
	for i := range 100_000 {
		if w := postAs(h, "192.0.2.1", fmt.Sprint("lone-", i)); w.Code != http.StatusCreated {
			t.Fatalf("the lone sender's key %d: %d %s", i+1, w.Code, w.Body)
		}
	}
}

// The store fill (a few addresses sending new keys until the store is
// full), on a memory store scaled down (1,400 keys):
// eight addresses send new keys until each is refused, and a ninth
// address still stores its key.
func TestNinthAddressAfterEightFillTheService(t *testing.T) {
	svc, err := New(context.Background(), Config{MaxKeys: 1_400})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	h := svc.Handler()
	stored := 0
	for a := range 8 {
		ip := fmt.Sprint("198.51.100.", a+1)
		for i := 0; ; i++ {
			w := postAs(h, ip, fmt.Sprint("fill-", a, "-", i))
			if w.Code != http.StatusCreated {
				wantFull(t, w)
				break
			}
			stored++
		}
	}
	if w := postAs(h, "198.51.100.9", "ninth"); w.Code != http.StatusCreated {
		t.Fatalf("after eight addresses stored %d keys, a ninth: %d %s; want 201", stored, w.Code, w.Body)
	}
}

// wantFull checks that w is the middleware's refusal of a client past its
// bound: 429 client-full with a Retry-After.
func wantFull(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), middleware.ProblemClientFull) || w.Header().Get("Retry-After") == "" {
		t.Fatalf("refused with %d %s (Retry-After %q); want 429 client-full with a Retry-After", w.Code, w.Body, w.Header().Get("Retry-After"))
	}
}

// On Redis and PostgreSQL each address is held to ClientKeys new keys per
// window, while another address still stores its own; with webhook keys
// (verified senders) no such bound applies.
func TestClientKeysOnSharedStores(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]Config{
		"redis":    {Store: testkit.SharedURL(), RedisPrefix: fmt.Sprintf("geoidem-test:%s:%d:", t.Name(), time.Now().UnixNano()), RedisDurability: redisstore.AcceptVolatile},
		"postgres": {Store: postgresURL(), KeyTable: "idem_clientkeys_test", FeaturesTable: "features_clientkeys_test"},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "postgres" {
				dropClientKeysTables(t, cfg)
				t.Cleanup(func() { dropClientKeysTables(t, cfg) })
			} else {
				t.Cleanup(func() { dropRedisPrefix(t, cfg.Store, cfg.RedisPrefix) })
			}
			cfg.ClientKeys = 5
			svc, err := New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			h := svc.Handler()
			for i := range 5 {
				if w := postAs(h, "198.51.100.1", fmt.Sprint(name, "-a-", i)); w.Code != http.StatusCreated {
					t.Fatalf("key %d of five: %d %s", i+1, w.Code, w.Body)
				}
			}
			wantFull(t, postAs(h, "198.51.100.1", name+"-a-5"))
			if w := postAs(h, "198.51.100.2", name+"-b-0"); w.Code != http.StatusCreated {
				t.Fatalf("another address: %d %s; want 201", w.Code, w.Body)
			}
		})
	}
}

func dropClientKeysTables(t *testing.T, cfg Config) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pgstore.Drop(ctx, pool, pgstore.Config{Table: cfg.KeyTable}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "DROP TABLE IF EXISTS "+cfg.FeaturesTable); err != nil {
		t.Fatal(err)
	}
}

func dropRedisPrefix(t *testing.T, url, prefix string) {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	if err := testkit.DeletePrefix(context.Background(), c, prefix); err != nil {
		t.Fatal(err)
	}
}

// One site's IPv6 /48 counts as a few clients, however many /64s it sends
// from: on a memory store of 64 keys, 256 /64s of one /48 send new keys
// until each is refused, and an IPv4 sender holding nothing still stores
// its key.
func TestOneSiteCannotFillTheService(t *testing.T) {
	svc, err := New(context.Background(), Config{MaxKeys: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	h := svc.Handler()
	stored := 0
	for s56 := range 16 {
		for s64 := range 16 {
			ip := fmt.Sprintf("[2001:db8:48:%x%02x::1]", s56, s64)
			for i := range 64 {
				if w := postAs(h, ip, fmt.Sprint("site-", s56, "-", s64, "-", i)); w.Code != http.StatusCreated {
					break
				}
				stored++
			}
		}
	}
	if w := postAs(h, "192.0.2.77", "other"); w.Code != http.StatusCreated {
		t.Fatalf("after one /48 stored %d keys, an IPv4 sender: %d %s; want 201", stored, w.Code, w.Body)
	}
	t.Logf("one /48 stored %d of 64 keys", stored)
}
