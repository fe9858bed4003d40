package middleware_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// slowBody is a request body that arrives after a long upload.
type slowBody struct {
	io.Reader
	delay time.Duration
	slept bool
}

func (b *slowBody) Read(p []byte) (int, error) {
	if !b.slept {
		b.slept = true
		time.Sleep(b.delay)
	}
	return b.Reader.Read(p)
}

// leavingStore is a memstore whose Claim commits while the client leaves
// (it calls leave before answering), and whose first Release fails, as
// when the connection breaks.
type leavingStore struct {
	*memstore.Store
	leave    func()
	releases atomic.Int64
}

func (s *leavingStore) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	c, err := s.Store.Claim(ctx, key, a)
	s.leave()
	return c, err
}

func (s *leavingStore) Release(ctx context.Context, key string, tok keystore.Token) error {
	if s.releases.Add(1) == 1 {
		return errors.New("read tcp 127.0.0.1:6379: connection reset by peer")
	}
	return s.Store.Release(ctx, key, tok)
}

// A request whose upload took longer than the lease, and whose client left
// while its claim was in flight, is abandoned: the key is released without
// running the handler. The lease runs from when the claim was sent, not from
// when the request arrived, so a Release that fails is retried in the
// background, and a retry a second later runs the handler instead of
// meeting 409 for the whole lease.
func TestAbandonAfterLongUploadReleasesKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		store := &leavingStore{Store: new(memstore.Store), leave: cancel}
		m := newMiddleware(t, store, middleware.Config{})
		var runs atomic.Int64
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			w.WriteHeader(http.StatusCreated)
		}))
		r := post("k1", feature).WithContext(ctx)
		r.Body = io.NopCloser(&slowBody{Reader: strings.NewReader(feature), delay: 2 * m.StoreLease()})
		if w := serve(h, r); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("abandoned request: %d, want 503", w.Code)
		}
		store.leave = func() {}
		time.Sleep(time.Second)
		if w := serve(h, post("k1", feature)); w.Code != http.StatusCreated {
			t.Fatalf("retry a second later: %d %s, want 201 (the release retried in the background)", w.Code, w.Body)
		}
		if runs.Load() != 1 {
			t.Fatalf("handler ran %d times, want 1", runs.Load())
		}
		shutdown(t, m)
	})
}
