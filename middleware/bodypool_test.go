package middleware_test

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// TestBodyBufferNotShared checks that the buffer a request's body was read
// into, given back once the handler returned, never shows that body's
// successors to the handler: a body kept and read after the handler
// returned (against net/http's contract) reads as ended, and whatever the
// handler read before it returned is its own copy.
func TestBodyBufferNotShared(t *testing.T) {
	store := memstore.New(memstore.Config{})
	var kept io.Reader
	var copied []byte
	h := newMiddleware(t, store, middleware.Config{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if kept == nil {
			kept = r.Body // read later, after the handler returned
			copied, _ = io.ReadAll(io.LimitReader(r.Body, 4))
		}
		w.WriteHeader(http.StatusCreated)
	}))
	first := strings.Repeat("a", 600)
	if w := serve(h, post("k-0", first)); w.Code != http.StatusCreated {
		t.Fatalf("first: status %d", w.Code)
	}
	for i := 1; i <= 20; i++ {
		body := strings.Repeat(strconv.Itoa(i%10), 600)
		if w := serve(h, post("k-"+strconv.Itoa(i), body)); w.Code != http.StatusCreated {
			t.Fatalf("request %d: status %d", i, w.Code)
		}
		if w := serve(h, post("k-"+strconv.Itoa(i), body)); w.Code != http.StatusCreated { // a replay
			t.Fatalf("replay %d: status %d", i, w.Code)
		}
	}
	if string(copied) != "aaaa" {
		t.Errorf("the handler's copy of its body is %q, want %q", copied, "aaaa")
	}
	late, err := io.ReadAll(kept)
	if err != nil || len(late) > 0 && strings.Trim(string(late), "a") != "" {
		t.Errorf("a body read after its handler returned gave %q, %v: bytes of another request", late, err)
	}
}

// TestValidatorKeepsBody checks that the body handed to a Validator stays
// its own: a validator may keep the bytes it is given.
func TestValidatorKeepsBody(t *testing.T) {
	store := memstore.New(memstore.Config{})
	var kept [][]byte
	v := middleware.ValidatorFunc(func(_ *http.Request, body []byte) error {
		kept = append(kept, body)
		return nil
	})
	h := newMiddleware(t, store, middleware.Config{Validator: v}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	var want [][]byte
	for i := range 20 {
		body := bytes.Repeat([]byte{byte('a' + i)}, 500)
		want = append(want, body)
		if w := serve(h, post("v-"+strconv.Itoa(i), string(body))); w.Code != http.StatusCreated {
			t.Fatalf("request %d: status %d", i, w.Code)
		}
	}
	for i := range want {
		if !bytes.Equal(kept[i], want[i]) {
			t.Errorf("the body validator kept of request %d changed: %.20q…, want %.20q…", i, kept[i], want[i])
		}
	}
}
