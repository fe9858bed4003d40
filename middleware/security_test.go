package middleware_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

type tenantKey struct{}

// authenticate stands for a team's auth middleware: it puts the caller's
// identity into the request context.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || pass != "pw-"+user {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, user)))
	})
}

func TestTenantCannotReplayAnotherTenantsResponse(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "private to %s", r.Context().Value(tenantKey{}))
	})
	m := newMiddleware(t, new(memstore.Store), middleware.Config{
		Scope: func(r *http.Request) string {
			return r.Context().Value(tenantKey{}).(string) + " " + r.Method + " " + r.URL.Path
		},
	})
	srv := authenticate(m.Handler(h))
	as := func(user string) *httptest.ResponseRecorder {
		r := post("guessable-key-1", feature)
		r.SetBasicAuth(user, "pw-"+user)
		return serve(srv, r)
	}
	if w := as("alice"); w.Body.String() != "private to alice" {
		t.Fatalf("alice: %q", w.Body)
	}
	// Mallory sends alice's key and payload: she gets her own execution.
	if w := as("mallory"); w.Body.String() != "private to mallory" || w.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("mallory with alice's key was answered %q (replayed=%q)", w.Body, w.Header().Get("Idempotent-Replayed"))
	}
	if w := as("alice"); w.Body.String() != "private to alice" || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("alice's retry: %q", w.Body)
	}
}

// keyRecorder records every key and record that reaches the store.
type keyRecorder struct {
	memstore.Store
	mu      sync.Mutex
	keys    []string
	records []record.Record
}

func (s *keyRecorder) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.mu.Unlock()
	return s.Store.Claim(ctx, key, a)
}

func (s *keyRecorder) Complete(ctx context.Context, key string, tok keystore.Token, rec []byte, ret time.Duration) error {
	s.mu.Lock()
	r, _ := record.Decode(rec)
	s.records = append(s.records, r)
	s.mu.Unlock()
	return s.Store.Complete(ctx, key, tok, rec, ret)
}

func TestStoreNeverSeesRawKeysOrCredentials(t *testing.T) {
	store := &keyRecorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range []string{"Set-Cookie", "Authorization", "Proxy-Authenticate", "WWW-Authenticate", "Connection", "Keep-Alive", "Trailer"} {
			w.Header().Set(name, "secret-"+name)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{}`)
	})
	m := newMiddleware(t, store, middleware.Config{})
	const raw = "customer-4711-invoice-2026-12"
	serve(m.Handler(h), post(raw, feature))
	replay := serve(m.Handler(h), post(raw, feature))
	for _, k := range store.keys {
		if strings.Contains(k, "4711") || len(k) != 64 {
			t.Errorf("the store saw key %q; want a 64-character hash only", k)
		}
	}
	if len(store.records) != 1 {
		t.Fatalf("%d records written, want 1", len(store.records))
	}
	for name := range store.records[0].Header {
		if name != "Content-Type" {
			t.Errorf("the record stores %s", name)
		}
	}
	for name, vs := range replay.Header() {
		if strings.HasPrefix(vs[0], "secret-") {
			t.Errorf("the replay carries %s: %q", name, vs)
		}
	}
}

// A sender trickling its body past the server's read timeout claims
// nothing: the key stays usable.
func TestSlowBodyClaimsNothing(t *testing.T) {
	store := new(memstore.Store)
	var ev events
	m := newMiddleware(t, store, middleware.Config{Observer: ev.observe})
	h := newCounter()
	srv := httptest.NewUnstartedServer(m.Handler(h))
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /features HTTP/1.1\r\nHost: x\r\nIdempotency-Key: slow\r\nContent-Length: %d\r\n\r\n%s", len(feature), feature[:10])
	// Never send the rest; the server's read deadline ends the request.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.ReadAll(conn)
	deadline := time.Now().Add(10 * time.Second)
	for len(ev.outcomes()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := ev.outcomes(); len(got) != 1 || got[0] != middleware.Rejected {
		t.Fatalf("outcomes %v, want [rejected]", got)
	}
	if st := store.Stats(); st.Entries != 0 || h.total.Load() != 0 {
		t.Fatalf("the slow request left %d entries and ran the handler %d times", st.Entries, h.total.Load())
	}
}

// Header limits are the server's: a key header far past MaxHeaderBytes
// never reaches the middleware.
func TestOversizedHeadersAreRefusedByTheServer(t *testing.T) {
	var ev events
	m := newMiddleware(t, new(memstore.Store), middleware.Config{Observer: ev.observe})
	srv := httptest.NewUnstartedServer(m.Handler(newCounter()))
	srv.Config.MaxHeaderBytes = 16 << 10
	srv.Start()
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/features", strings.NewReader(feature))
	req.Header.Set("Idempotency-Key", strings.Repeat("k", 64<<10))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB key header: %d, want 431", resp.StatusCode)
	}
	if len(ev.outcomes()) != 0 {
		t.Fatalf("the middleware saw the request: %v", ev.outcomes())
	}
}
