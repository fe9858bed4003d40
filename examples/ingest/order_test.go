package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// observed is feature f observed at 10:00:ss.
func observed(id string, ss int) string {
	return fmt.Sprintf(`{"type":"Feature","id":%q,"geometry":{"type":"Point","coordinates":[%d,1]},"properties":{"observation_time":"2026-03-01T10:00:%02dZ"}}`, id, ss, ss)
}

// observationTime returns the observation_time of the feature stored under id.
func observationTime(t *testing.T, url, id string) string {
	t.Helper()
	r, b := do(t, http.MethodGet, url+"/features/"+id, "", "")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET /features/%s: %d %s", id, r.StatusCode, b)
	}
	var f struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal([]byte(b), &f); err != nil {
		t.Fatalf("GET /features/%s: %v: %s", id, err, b)
	}
	s, _ := f.Properties["observation_time"].(string)
	return s
}

// The reordered pair: f observed at 10:00:09 (key k2) arrives first, then the
// older observation of 10:00:05 (key k1), retried past it. The newest stays,
// on every store; the stale update is acknowledged 200 and says so, and its
// retry is a replay of that answer.
func TestIngestNewestObservationWins(t *testing.T) {
	for _, s := range ingestStores(t) {
		t.Run(s.name, func(t *testing.T) {
			url := start(t, s.args...)
			if r, b := do(t, http.MethodPost, url+"/features", "k2", observed("f", 9)); r.StatusCode != http.StatusCreated {
				t.Fatalf("POST 10:00:09: %d %s", r.StatusCode, b)
			}
			r, b := do(t, http.MethodPost, url+"/features", "k1", observed("f", 5))
			if got := observationTime(t, url, "f"); got != "2026-03-01T10:00:09Z" {
				t.Fatalf("GET /features/f returns the observation of %s after 10:00:09 then 10:00:05 arrived; want 10:00:09 (the newest)", got)
			}
			if r.StatusCode != http.StatusOK || b != `{"stored":[],"stale":["f"]}` {
				t.Errorf("the older update: %d %s; want 200 {\"stored\":[],\"stale\":[\"f\"]}", r.StatusCode, b)
			}
			again, b2 := do(t, http.MethodPost, url+"/features", "k1", observed("f", 5))
			if again.StatusCode != r.StatusCode || b2 != b || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("retry of the older update: %d %s replayed=%q; want the recorded answer", again.StatusCode, b2, again.Header.Get("Idempotent-Replayed"))
			}
			// A newer one still wins, and so does the larger of two
			// different features observed at the same time.
			if r, b := do(t, http.MethodPost, url+"/features", "k3", observed("f", 11)); r.StatusCode != http.StatusCreated || b != `{"stored":["f"]}` {
				t.Fatalf("POST 10:00:11: %d %s", r.StatusCode, b)
			}
			tieLarge := strings.Replace(observed("f", 11), `[11,1]`, `[12,1]`, 1)
			if r, b := do(t, http.MethodPost, url+"/features", "k4", tieLarge); r.StatusCode != http.StatusCreated {
				t.Fatalf("POST 10:00:11 with larger bytes: %d %s; want 201 (equal times: the larger bytes win)", r.StatusCode, b)
			}
			if r, b := do(t, http.MethodPost, url+"/features", "k5", observed("f", 11)); r.StatusCode != http.StatusOK || b != `{"stored":[],"stale":["f"]}` {
				t.Fatalf("POST 10:00:11 with smaller bytes after larger: %d %s; want 200 stale", r.StatusCode, b)
			}
			if _, got := do(t, http.MethodGet, url+"/features/f", "", ""); got != tieLarge {
				t.Errorf("GET /features/f = %s, want %s", got, tieLarge)
			}
			// Within one collection, each feature is compared with what the
			// ones before it left.
			coll := `{"type":"FeatureCollection","features":[` + observed("g", 20) + `,` + observed("g", 15) + `,` + observed("h", 1) + `]}`
			if r, b := do(t, http.MethodPost, url+"/features", "k6", coll); r.StatusCode != http.StatusCreated || b != `{"stored":["g","h"],"stale":["g"]}` {
				t.Fatalf("collection g@20, g@15, h@1: %d %s; want 201 {\"stored\":[\"g\",\"h\"],\"stale\":[\"g\"]}", r.StatusCode, b)
			}
			if got := observationTime(t, url, "g"); got != "2026-03-01T10:00:20Z" {
				t.Errorf("g holds %s, want 10:00:20", got)
			}
		})
	}
}

// A feature without the property keeps last-write-wins until it is stored
// with a time: after p@30, updates without a time are acknowledged as
// "unstamped" (200, recorded) and change nothing, so nobody can roll p back
// by leaving the time out; a stamped update over an unstamped feature wins.
func TestIngestWithoutObservationTimeLastWriteWins(t *testing.T) {
	for _, s := range ingestStores(t) {
		t.Run(s.name, func(t *testing.T) {
			url := start(t, s.args...)
			plain := func(id string, x int) string {
				return fmt.Sprintf(`{"type":"Feature","id":%q,"geometry":{"type":"Point","coordinates":[%d,1]},"properties":null}`, id, x)
			}
			if r, b := do(t, http.MethodPost, url+"/features", "lw0", observed("p", 30)); r.StatusCode != http.StatusCreated {
				t.Fatalf("POST p@30: %d %s", r.StatusCode, b)
			}
			for i, body := range []string{plain("p", 2), plain("p", 1)} {
				key := "lw" + strconv.Itoa(i+1)
				r, b := do(t, http.MethodPost, url+"/features", key, body)
				if r.StatusCode != http.StatusOK || b != `{"stored":[],"unstamped":["p"]}` {
					t.Fatalf("an update without a time over p@30: %d %s; want 200 {\"stored\":[],\"unstamped\":[\"p\"]}", r.StatusCode, b)
				}
				if again, b2 := do(t, http.MethodPost, url+"/features", key, body); again.StatusCode != r.StatusCode || b2 != b || again.Header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("its retry: %d %s replayed=%q; want the recorded answer", again.StatusCode, b2, again.Header.Get("Idempotent-Replayed"))
				}
			}
			if _, got := do(t, http.MethodGet, url+"/features/p", "", ""); got != observed("p", 30) {
				t.Errorf("GET /features/p = %s, want p@30 kept: %s", got, observed("p", 30))
			}
			// Without a time on either side: the last write wins.
			for i, body := range []string{plain("q", 2), plain("q", 1)} {
				if r, b := do(t, http.MethodPost, url+"/features", "lwq"+strconv.Itoa(i), body); r.StatusCode != http.StatusCreated || b != `{"stored":["q"]}` {
					t.Fatalf("POST %s: %d %s, want 201 stored", body, r.StatusCode, b)
				}
			}
			if _, got := do(t, http.MethodGet, url+"/features/q", "", ""); got != plain("q", 1) {
				t.Errorf("GET /features/q = %s, want the last written %s", got, plain("q", 1))
			}
			if r, b := do(t, http.MethodPost, url+"/features", "lwq2", observed("q", 1)); r.StatusCode != http.StatusCreated || b != `{"stored":["q"]}` {
				t.Fatalf("a stamped update over an unstamped feature: %d %s, want 201", r.StatusCode, b)
			}
			// One collection: each feature against what the ones before it left.
			coll := `{"type":"FeatureCollection","features":[` + observed("u", 5) + `,` + plain("u", 9) + `,` + plain("v", 1) + `]}`
			if r, b := do(t, http.MethodPost, url+"/features", "lwc", coll); r.StatusCode != http.StatusCreated || b != `{"stored":["u","v"],"unstamped":["u"]}` {
				t.Fatalf("collection u@5, u, v: %d %s; want 201 {\"stored\":[\"u\",\"v\"],\"unstamped\":[\"u\"]}", r.StatusCode, b)
			}
		})
	}
}

// An observation time further ahead of the receiver's clock than its skew
// (-max-observation-skew, by default newest's five minutes) is
// refused until the clock has caught up: 503 observation-time-ahead naming
// it with a JSON pointer, Retry-After when the skew will pass, and
// released, so that the same bytes succeed then; nothing of the request is
// stored meanwhile: one request stamped 9999-12-31T23:59:59.999999999-23:59
// would otherwise pin its feature for good. A time within the skew is
// stored.
func TestIngestObservationTimeAheadIsRefused(t *testing.T) {
	at := func(id string, ts string) string {
		return fmt.Sprintf(`{"type":"Feature","id":%q,"geometry":null,"properties":{"observation_time":%q}}`, id, ts)
	}
	soon := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	// later is stamped in whole seconds: the skew passes at laterAt less
	// the skew, which is how long a refusal's Retry-After must be at the
	// least, counted from when it is read (the servers of the stores start
	// one after the other, and on a loaded machine take seconds to).
	laterAt := time.Now().Add(time.Hour).Truncate(time.Second)
	later := laterAt.UTC().Format(time.RFC3339)
	const defaultSkew = 5 * time.Minute // newest.Policy's, as documented
	untilSkewPasses := func() time.Duration { return time.Until(laterAt) - defaultSkew }
	for _, s := range ingestStores(t) {
		t.Run(s.name, func(t *testing.T) {
			url := start(t, s.args...)
			for i, c := range []struct {
				body, pointer string
				wait          func() time.Duration // the least Retry-After wanted, when the answer is read
			}{
				{at("pin", "9999-12-31T23:59:59.999999999-23:59"), "/properties/observation_time", func() time.Duration { return 200 * 365 * 24 * time.Hour }},
				{at("pin", later), "/properties/observation_time", untilSkewPasses},
				{`{"type":"FeatureCollection","features":[` + at("pin", soon) + `,` + at("pin2", later) + `]}`, "/features/1/properties/observation_time", untilSkewPasses},
			} {
				key := "ahead" + strconv.Itoa(i)
				for try := range 2 {
					r, b := do(t, http.MethodPost, url+"/features", key, c.body)
					var p struct {
						Type   string
						Errors []struct{ Pointer, Detail string }
					}
					_ = json.Unmarshal([]byte(b), &p)
					if r.StatusCode != http.StatusServiceUnavailable || !strings.HasSuffix(p.Type, "#observation-time-ahead") ||
						len(p.Errors) != 1 || p.Errors[0].Pointer != c.pointer || !strings.Contains(p.Errors[0].Detail, "ahead") {
						t.Errorf("%s (try %d): %d %s; want 503 observation-time-ahead, pointer %s, saying it is ahead", c.body, try, r.StatusCode, b, c.pointer)
					}
					if r.Header.Get("Idempotent-Replayed") != "" {
						t.Errorf("%s (try %d): a replay; want the key released, the request run again", c.body, try)
					}
					ra, err := strconv.ParseInt(r.Header.Get("Retry-After"), 10, 64)
					if wait := c.wait(); err != nil || time.Duration(min(ra, int64(1<<63-1)/int64(time.Second)))*time.Second < wait {
						t.Errorf("%s (try %d): Retry-After %q; want when the skew passes, at least %v", c.body, try, r.Header.Get("Retry-After"), wait)
					}
				}
			}
			if r, _ := do(t, http.MethodGet, url+"/features/pin", "", ""); r.StatusCode != http.StatusNotFound {
				t.Errorf("GET /features/pin: %d, want 404: nothing of a refused request is stored", r.StatusCode)
			}
			if r, b := do(t, http.MethodPost, url+"/features", "soon", at("pin", soon)); r.StatusCode != http.StatusCreated {
				t.Errorf("a time a minute ahead: %d %s, want 201 (within the skew)", r.StatusCode, b)
			}
		})
	}
	url := start(t, "-max-observation-skew", "2h")
	if r, b := do(t, http.MethodPost, url+"/features", "later", at("pin", later)); r.StatusCode != http.StatusCreated {
		t.Errorf("an hour ahead with -max-observation-skew 2h: %d %s, want 201", r.StatusCode, b)
	}
}

// An observation stamped ahead of the skew succeeds, same key and same
// bytes, once its Retry-After has passed: the refusal was the clock's, not
// the input's.
func TestIngestObservationAheadSucceedsAtRetryAfter(t *testing.T) {
	url := start(t, "-max-observation-skew", "1s")
	body := fmt.Sprintf(`{"type":"Feature","id":"early","geometry":null,"properties":{"observation_time":%q}}`,
		time.Now().Add(3*time.Second).UTC().Format(time.RFC3339Nano))
	r, b := do(t, http.MethodPost, url+"/features", "early", body)
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if r.StatusCode != http.StatusServiceUnavailable || err != nil || ra < 1 || ra > 3 {
		t.Fatalf("a time 3 s ahead, skew 1 s: %d Retry-After %q %s; want 503 with Retry-After 1 to 3 s", r.StatusCode, r.Header.Get("Retry-After"), b)
	}
	time.Sleep(time.Duration(ra) * time.Second)
	if r, b := do(t, http.MethodPost, url+"/features", "early", body); r.StatusCode != http.StatusCreated {
		t.Fatalf("the same delivery at its Retry-After: %d %s; want 201", r.StatusCode, b)
	}
}

// A malformed observation_time is a 422 naming it with a JSON pointer,
// recorded, and nothing is stored: never a silent default.
func TestIngestMalformedObservationTime(t *testing.T) {
	url := start(t)
	for i, c := range []struct{ body, pointer string }{
		{`{"type":"Feature","id":"m","geometry":null,"properties":{"observation_time":"yesterday"}}`, "/properties/observation_time"},
		{`{"type":"Feature","id":"m","geometry":null,"properties":{"observation_time":1700000000}}`, "/properties/observation_time"},
		{`{"type":"FeatureCollection","features":[` + observed("m", 1) + `,{"type":"Feature","id":"n","geometry":null,"properties":{"observation_time":"2026-03-01 10:00:00"}}]}`, "/features/1/properties/observation_time"},
	} {
		key := "bad" + strconv.Itoa(i)
		r, b := do(t, http.MethodPost, url+"/features", key, c.body)
		var p struct {
			Type   string
			Errors []struct{ Pointer, Detail string }
		}
		_ = json.Unmarshal([]byte(b), &p)
		if r.StatusCode != http.StatusUnprocessableEntity || !strings.HasSuffix(p.Type, "#observation-time-invalid") ||
			len(p.Errors) != 1 || p.Errors[0].Pointer != c.pointer {
			t.Errorf("%s: %d %s; want 422 observation-time-invalid with pointer %s", c.body, r.StatusCode, b, c.pointer)
		}
		if again, b2 := do(t, http.MethodPost, url+"/features", key, c.body); again.StatusCode != r.StatusCode || b2 != b || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry: %d %s; want the recorded 422", again.StatusCode, b2)
		}
	}
	if r, _ := do(t, http.MethodGet, url+"/features/m", "", ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET /features/m: %d; want 404 (nothing of a refused request is stored)", r.StatusCode)
	}
}

// -order-property names another property; observation_time is then an
// ordinary property.
func TestIngestOrderProperty(t *testing.T) {
	url := start(t, "-order-property", "seen at")
	at := func(ss int, ot string) string {
		return fmt.Sprintf(`{"type":"Feature","id":"o","geometry":null,"properties":{"seen at":"2026-03-01T10:00:%02dZ","observation_time":%q}}`, ss, ot)
	}
	if r, b := do(t, http.MethodPost, url+"/features", "o1", at(9, "not a time")); r.StatusCode != http.StatusCreated {
		t.Fatalf("POST: %d %s", r.StatusCode, b)
	}
	if r, b := do(t, http.MethodPost, url+"/features", "o2", at(5, "ignored")); r.StatusCode != http.StatusOK || b != `{"stored":[],"stale":["o"]}` {
		t.Fatalf("older by \"seen at\": %d %s; want 200 stale", r.StatusCode, b)
	}
	r, b := do(t, http.MethodPost, url+"/features", "o3", `{"type":"Feature","id":"o","geometry":null,"properties":{"seen at":"soon"}}`)
	if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(b, `"pointer":"/properties/seen at"`) {
		t.Fatalf("a malformed \"seen at\": %d %s; want 422 with its pointer", r.StatusCode, b)
	}
}

// Concurrent updates of one id on PostgreSQL: whatever the interleaving,
// the newest observation is what stays (no lost newest).
func TestIngestConcurrentUpdatesPostgres(t *testing.T) {
	url, table, conn := pgService(t)
	const n = 40
	order := rand.Perm(n)
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for _, i := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := observed("c", i)
			req, _ := http.NewRequest(http.MethodPost, url+"/features", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/geo+json")
			req.Header.Set("Idempotency-Key", "c"+strconv.Itoa(i))
			// Forty senders, each on an address of its own, as the front
			// door bounds the connections of one (eight).
			resp, err := loopbackClient(fmt.Sprintf("127.0.2.%d", i+1)).Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
				errs <- fmt.Sprintf("observation %d: %d", i, resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got := observationTime(t, url, "c"); got != fmt.Sprintf("2026-03-01T10:00:%02dZ", n-1) {
		t.Errorf("after %d concurrent updates, c holds %s; want the newest, 10:00:%02d", n, got, n-1)
	}
	var at string
	if err := conn.QueryRow(context.Background(), `SELECT to_char(observed_at AT TIME ZONE 'UTC', 'HH24:MI:SS') FROM `+table+` WHERE id = 'c'`).Scan(&at); err != nil || at != fmt.Sprintf("10:00:%02d", n-1) {
		t.Errorf("observed_at = %q (%v), want 10:00:%02d", at, err, n-1)
	}
}
