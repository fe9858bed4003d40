package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/middleware"
)

// sleeper is a handler that takes the time its request's X-Take header
// says, or until the instant its X-Until header says (Unix nanoseconds).
func sleeper(w http.ResponseWriter, r *http.Request) {
	if d, err := time.ParseDuration(r.Header.Get("X-Take")); err == nil {
		time.Sleep(d)
	}
	if ns, err := strconv.ParseInt(r.Header.Get("X-Until"), 10, 64); err == nil {
		time.Sleep(time.Until(time.Unix(0, ns)))
	}
	w.WriteHeader(http.StatusCreated)
}

func timedRequest(client, header, value string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/features", nil)
	r.Header.Set("X-Client", client)
	r.Header.Set(header, value)
	return r
}

// retryAfter returns the Retry-After of a refusal by h, in seconds.
func retryAfter(t *testing.T, h http.Handler, client string) int {
	t.Helper()
	w := serve(h, timedRequest(client, "X-Take", "0s"))
	ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
	if w.Code != http.StatusServiceUnavailable || err != nil {
		t.Fatalf("answered %d with Retry-After %q, want 503 with whole seconds", w.Code, w.Header().Get("Retry-After"))
	}
	return ra
}

// A refusal's Retry-After is when a slot really frees: waiting that long,
// the retry is admitted, and it is not much longer than needed. It used to
// be the moving average of admitted requests' durations, which says 1 s
// while slow bodies hold every slot until they are cut off (slots held
// 30 s under the slow-body attack), and 10 s when requests take 10 s but the first in
// flight ends in 3.
func TestAdmissionRetryAfterIsWhenASlotFrees(t *testing.T) {
	newAdmission := func(t *testing.T) (*middleware.Admission, http.Handler) {
		a, err := middleware.NewAdmission(middleware.AdmissionConfig{
			MaxInFlight: 4,
			Client:      func(r *http.Request) string { return r.Header.Get("X-Client") },
			BodyDeadline: func(r *http.Request) time.Time {
				ns, err := strconv.ParseInt(r.Header.Get("X-Until"), 10, 64)
				if err != nil {
					return time.Time{}
				}
				return time.Unix(0, ns)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return a, a.Handler(http.HandlerFunc(sleeper))
	}
	// past sets the moving average: 64 requests that took take each.
	past := func(h http.Handler, take time.Duration) {
		for range 64 {
			serve(h, timedRequest("past", "X-Take", take.String()))
		}
	}
	// retry waits ra seconds, lets what ends by then end, and checks that
	// a request is admitted.
	retry := func(t *testing.T, h http.Handler, ra int) {
		t.Helper()
		time.Sleep(time.Duration(ra) * time.Second)
		synctest.Wait()
		if w := serve(h, timedRequest("late", "X-Take", "0s")); w.Code != http.StatusCreated {
			t.Errorf("retried after Retry-After %d s: answered %d, want 201", ra, w.Code)
		}
	}

	t.Run("slow bodies cut off at their deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, h := newAdmission(t)
			past(h, 50*time.Millisecond)
			var wg sync.WaitGroup
			until := strconv.FormatInt(time.Now().Add(8*time.Second).UnixNano(), 10)
			for i := range 4 { // four slow bodies, each cut off 8 s from now
				wg.Go(func() { serve(h, timedRequest("slow"+strconv.Itoa(i), "X-Until", until)) })
			}
			synctest.Wait()
			time.Sleep(2 * time.Second)
			ra := retryAfter(t, h, "other")
			if ra < 6 || ra > 7 {
				t.Errorf("Retry-After %d s, want 6 s: the slow bodies are cut off 6 s from now (requests take 50 ms)", ra)
			}
			retry(t, h, ra)
			wg.Wait()
			if s := a.Stats(); s.InFlight != 0 {
				t.Errorf("Stats %+v, want nothing in flight", s)
			}
		})
	})

	t.Run("requests that take 10 s", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, h := newAdmission(t)
			past(h, 10*time.Second)
			var wg sync.WaitGroup
			for i := range 4 { // one a second: the first ends 10 s after it began
				wg.Go(func() { serve(h, timedRequest("long"+strconv.Itoa(i), "X-Take", "10s")) })
				time.Sleep(time.Second)
			}
			time.Sleep(500 * time.Millisecond) // 4.5 s after the first began
			ra := retryAfter(t, h, "other")
			if ra < 5 || ra > 6 {
				t.Errorf("Retry-After %d s, want 6 s: the first request in flight ends 5.5 s from now", ra)
			}
			retry(t, h, ra)
			wg.Wait()
		})
	})

	t.Run("requests running longer than requests take, no deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, h := newAdmission(t)
			past(h, 50*time.Millisecond)
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() { serve(h, timedRequest("long"+strconv.Itoa(i), "X-Take", "30s")) })
			}
			synctest.Wait()
			time.Sleep(4 * time.Second)
			// Nothing says when they end: they are guessed to run as long
			// again as they have, not to end within the 50 ms requests take.
			if ra := retryAfter(t, h, "other"); ra != 4 {
				t.Errorf("Retry-After %d s, want 4 s: as long again as the requests in flight have run", ra)
			}
			wg.Wait()
		})
	})
}
