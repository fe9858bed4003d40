package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/client"
)

// A receiver that is busy on the first attempt and replays its record on
// the second: the sender retries under the same key and reports the replay.
func Example() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"stored":"f1"}`)
	}))
	defer srv.Close()

	s, err := client.New(srv.Client(), client.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := s.Deliver(context.Background(), client.Delivery{
		URL:         srv.URL + "/features",
		Key:         "6f1c2a1e-9b4f-4a57-9c55-2c1b7f3c8a10",
		Body:        []byte(`{"type":"Feature","id":"f1","geometry":null,"properties":null}`),
		ContentType: "application/geo+json",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Attempts, res.StatusCode, res.Replayed, string(res.Body))
	// Output: 2 201 true {"stored":"f1"}
}

// A 422 is permanent: it is returned at once, with its problem document,
// and dead-lettered.
func ExampleSender_Deliver_permanent() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"type":"https://github.com/geoidem/geoidem/blob/main/docs/problems.md#invalid-geojson","title":"Invalid GeoJSON",`+
			`"status":422,"errors":[{"pointer":"/geometry/coordinates","detail":"too few positions"}]}`)
	}))
	defer srv.Close()

	dir, _ := os.MkdirTemp("", "deadletters")
	defer os.RemoveAll(dir)
	sink, _ := client.OpenJSONLinesFile(filepath.Join(dir, "dead.jsonl"))
	defer sink.Close()

	s, _ := client.New(srv.Client(), client.Config{DeadLetter: sink})
	res, err := s.Deliver(context.Background(), client.Delivery{
		URL: srv.URL, Key: "k1", Body: []byte(`{"type":"Feature","geometry":{"type":"LineString","coordinates":[[0,0]]},"properties":null}`),
	})
	var se *client.StatusError
	if errors.Is(err, client.ErrPermanent) && errors.As(err, &se) {
		fmt.Println(res.Attempts, se.StatusCode, se.Problem.Name(), se.Problem.Errors[0].Pointer+":", se.Problem.Errors[0].Detail)
	}
	// Output: 1 422 invalid-geojson /geometry/coordinates: too few positions
}

// A Backoff needs no HTTP: a simulation drives it directly.
func ExampleBackoff_Next() {
	b := client.Backoff{Strategy: client.Exponential, Base: 500 * time.Millisecond, Cap: 5 * time.Second}
	var delays []time.Duration
	var d time.Duration
	for retry := 1; retry <= 6; retry++ {
		d = b.Next(d, retry, nil)
		delays = append(delays, d)
	}
	fmt.Println(delays)

	// Decorrelated jitter: every delay in [base, cap], each drawn from the
	// one before.
	rnd := rand.New(rand.NewPCG(1, 2))
	var prev time.Duration
	within := true
	for retry := 1; retry <= 100; retry++ {
		prev = client.Backoff{}.Next(prev, retry, rnd)
		within = within && prev >= 500*time.Millisecond && prev <= 30*time.Second
	}
	fmt.Println(within)
	// Output:
	// [500ms 1s 2s 4s 5s 5s]
	// true
}

func ExampleEncodeKey() {
	for _, key := range []string{"order-42", `order "42"`} {
		v, _ := client.EncodeKey(key)
		fmt.Println(v)
	}
	// Output:
	// order-42
	// "order \"42\""
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Sun, 01 Mar 2026 12:00:30 GMT", "Sunday, 01-Mar-26 12:01:00 GMT", "Sun Mar  1 12:02:00 2026"} {
		d, ok := client.ParseRetryAfter(v, "", now)
		fmt.Println(d, ok)
	}
	// Output:
	// 2m0s true
	// 30s true
	// 1m0s true
	// 2m0s true
}

// A retry budget shared by every delivery to one endpoint: while the
// endpoint is down, its one token of burst pays for one retry, and the
// next delivery gives up after its first attempt instead of adding
// retries to the outage.
func ExampleRetryBudget() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	budget, _ := client.NewRetryBudget(0.1, 1)
	s, _ := client.New(srv.Client(), client.Config{Budget: budget, Backoff: client.Backoff{Strategy: client.None}})
	for _, key := range []string{"k1", "k2"} {
		res, err := s.Deliver(context.Background(), client.Delivery{URL: srv.URL, Key: key, Body: []byte(`{}`)})
		fmt.Println(key, res.Attempts, errors.Is(err, client.ErrBudgetExhausted))
	}
	// Output:
	// k1 2 true
	// k2 1 true
}

// The JSON-lines form of a dead letter: the payload is embedded as JSON,
// byte for byte, ready to be re-sent under the same key.
func ExampleNewJSONLinesSink() {
	sink := client.NewJSONLinesSink(os.Stdout)
	_ = sink.Put(context.Background(), client.DeadLetter{
		Delivery: client.Delivery{
			URL:         "https://receiver.example/features",
			Method:      "POST",
			Key:         "k1",
			ContentType: "application/geo+json",
			Body:        []byte(`{"type":"Feature","geometry":null,"properties":null}`),
		},
		Time:       time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Attempts:   6,
		LastStatus: 503,
		Reason:     "exhausted",
		Error:      "client: delivery of key \"k1\": attempts exhausted after 6 attempts: client: 503 Service Unavailable",
	})
	// Output:
	// {"time":"2026-03-01T12:00:00Z","url":"https://receiver.example/features","method":"POST","key":"k1","content_type":"application/geo+json","payload":{"type":"Feature","geometry":null,"properties":null},"attempts":6,"last_status":503,"reason":"exhausted","error":"client: delivery of key \"k1\": attempts exhausted after 6 attempts: client: 503 Service Unavailable"}
}

// An Outbox writes each delivery to a journal before its first attempt;
// a second run (or a sender restarted after a crash) that stamps the event
// anew still sends the bytes first recorded, and the receiver replays.
func ExampleOutbox() {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Printf("received %s\n", body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer receiver.Close()
	dir, _ := os.MkdirTemp("", "outbox")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sender.journal")

	for run, stamp := range []string{"12:00", "13:30"} {
		journal, err := client.OpenFileJournal(path, client.FileJournalConfig{})
		if err != nil {
			panic(err)
		}
		sender, _ := client.New(nil, client.Config{})
		outbox := client.NewOutbox(sender, journal)
		_, err = outbox.Deliver(context.Background(), client.Delivery{
			URL:  receiver.URL,
			Key:  "event-42",
			Body: []byte(`{"observation_time":"` + stamp + `"}`),
		})
		fmt.Println("run", run+1, "error", err)
		journal.Close()
	}
	// Output:
	// received {"observation_time":"12:00"}
	// run 1 error <nil>
	// received {"observation_time":"12:00"}
	// run 2 error <nil>
}
