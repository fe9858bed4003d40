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

// The pair: f observed at 10:00:09 (key k2) arrives first, then the
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

// A feature without the property keeps last-write-wins, and the newest
// rule takes over once a stored feature has a time.
func TestIngestWithoutObservationTimeLastWriteWins(t *testing.T) {
	url := start(t)
	plain := func(x int) string {
		return fmt.Sprintf(`{"type":"Feature","id":"p","geometry":{"type":"Point","coordinates":[%d,1]},"properties":null}`, x)
	}
	for i, body := range []string{observed("p", 30), plain(2), plain(1)} {
		if r, b := do(t, http.MethodPost, url+"/features", "lw"+strconv.Itoa(i), body); r.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", body, r.StatusCode, b)
		}
	}
	if _, got := do(t, http.MethodGet, url+"/features/p", "", ""); got != plain(1) {
		t.Errorf("GET /features/p = %s, want the last written %s", got, plain(1))
	}
	if r, b := do(t, http.MethodPost, url+"/features", "lw3", observed("p", 1)); r.StatusCode != http.StatusCreated {
		t.Fatalf("a timed update over an untimed feature: %d %s, want 201", r.StatusCode, b)
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
			resp, err := http.DefaultClient.Do(req)
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
