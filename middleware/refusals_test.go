package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// cutReader is a body whose upload the transport cut: some bytes, then
// the server's read fails (its ReadTimeout, a reset mid-upload).
type cutReader struct {
	head io.Reader
	err  error
}

func (c *cutReader) Read(p []byte) (int, error) {
	if n, err := c.head.Read(p); err != io.EOF {
		return n, err
	}
	return 0, c.err
}

// A body the server failed to read is the transport's fault, not the
// input's: the same bytes, delivered whole, succeed. The answer is
// transient (408 body-unreadable with Retry-After), nothing was claimed,
// and the retry with the same key runs the handler.
func TestBodyUnreadableIsTransient(t *testing.T) {
	for _, cut := range []error{
		&timeoutErr{}, // the server's ReadTimeout
		errors.New("connection reset by peer"),
		io.ErrUnexpectedEOF, // a body shorter than its Content-Length
	} {
		t.Run(cut.Error(), func(t *testing.T) {
			c := newCounter()
			m := newMiddleware(t, memstore.New(memstore.Config{}), middleware.Config{RetryAfter: 3 * time.Second})
			h := m.Handler(c)
			r := post("cut", feature)
			r.Body = io.NopCloser(&cutReader{head: strings.NewReader(feature[:20]), err: cut})
			r.ContentLength = -1
			w := serve(h, r)
			wantProblem(t, w, http.StatusRequestTimeout, middleware.ProblemBodyUnreadable)
			if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || ra < 3 {
				t.Errorf("Retry-After = %q, want Config.RetryAfter (3 s)", w.Header().Get("Retry-After"))
			}
			if w := serve(h, post("cut", feature)); w.Code != http.StatusCreated || c.total.Load() != 1 {
				t.Errorf("retry with the whole body: %d after %d runs; want 201 from the one run", w.Code, c.total.Load())
			}
		})
	}
}

type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "i/o timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return true }

// fullBackgroundStore is a memstore whose Complete always fails (its
// records pile up in the background), and whose Claim, once lose is set,
// commits and then loses its reply: a claim whose outcome is unknown.
type fullBackgroundStore struct {
	*memstore.Store
	lose atomic.Bool
}

func (*fullBackgroundStore) Complete(context.Context, string, keystore.Token, []byte, time.Duration) error {
	return errors.New("network down")
}

func (s *fullBackgroundStore) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	c, err := s.Store.Claim(ctx, key, a)
	if err == nil && s.lose.CompareAndSwap(true, false) {
		return keystore.Claim{}, errors.New("connection reset by peer")
	}
	return c, err
}

// A release is never dropped: with the background half full of records
// (MaxBackground/2 and more), the release of a claim whose outcome is
// unknown is still written, so that the retry runs the handler instead of
// meeting 409 for the whole lease.
func TestUncertainReleaseNeverDropped(t *testing.T) {
	for _, pending := range []int{middleware.MaxBackground / 2, middleware.MaxBackground} {
		t.Run(fmt.Sprint(pending, " records pending"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &fullBackgroundStore{Store: memstore.New(memstore.Config{ReserveBytes: -1})}
				m := newMiddleware(t, store, middleware.Config{})
				c := newCounter()
				h := m.Handler(c)
				for i := range pending {
					if w := serve(h, post(fmt.Sprint("k", i), feature)); w.Code != http.StatusCreated {
						t.Fatalf("%d: %d", i, w.Code)
					}
				}
				store.lose.Store(true)
				wantProblem(t, serve(h, post("lost", feature)), http.StatusServiceUnavailable, middleware.ProblemStoreDown)
				synctest.Wait()
				runs := c.total.Load()
				if w := serve(h, post("lost", feature)); w.Code != http.StatusCreated || c.total.Load() != runs+1 {
					t.Errorf("retry after a claim whose reply was lost, background full: %d; want 201 from a run (the release was dropped: 409 for the whole lease)", w.Code)
				}
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_ = m.Shutdown(ctx)
			})
		})
	}
}
