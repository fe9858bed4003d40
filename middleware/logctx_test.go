package middleware_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

type traceIDKey struct{}

// ctxHandler keeps, per record, the trace id found in the context it was
// logged with: what a handler that adds trace ids to records sees.
type ctxHandler struct {
	mu  *sync.Mutex
	ids *[]string
}

func (h ctxHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	id, _ := ctx.Value(traceIDKey{}).(string)
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.ids = append(*h.ids, r.Message+": "+id)
	return nil
}
func (h ctxHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h ctxHandler) WithGroup(string) slog.Handler      { return h }

// TestDebugLogCarriesRequestContext: the outcome's debug record is logged
// with the request's context, so a log handler can add the request's
// trace id to it.
func TestDebugLogCarriesRequestContext(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	m, err := middleware.New(new(memstore.Store), middleware.Config{Logger: slog.New(ctxHandler{&mu, &ids})})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`))
	r = r.WithContext(context.WithValue(r.Context(), traceIDKey{}, "trace-1"))
	r.Header.Set("Idempotency-Key", "k1")
	h.ServeHTTP(httptest.NewRecorder(), r)

	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, l := range ids {
		if strings.HasPrefix(l, "idempotency outcome: ") {
			found = true
			if l != "idempotency outcome: trace-1" {
				t.Errorf("debug record %q, want it logged with the request's context (trace-1)", l)
			}
		}
	}
	if !found {
		t.Errorf("no idempotency outcome record among %q", ids)
	}
}

// TestObserverSeesRequestWithoutKey: as Event's documentation says, a
// request of a covered method without a key is an event (Rejected, no
// key); a request of another method is none.
func TestObserverSeesRequestWithoutKey(t *testing.T) {
	var events []middleware.Event
	m, err := middleware.New(new(memstore.Store), middleware.Config{Observer: func(ev middleware.Event) { events = append(events, ev) }})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`)))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if len(events) != 1 || events[0].Outcome != middleware.Rejected || events[0].Key != "" || events[0].Status != http.StatusBadRequest {
		t.Errorf("events %+v, want one: Rejected, no key, 400", events)
	}
}
