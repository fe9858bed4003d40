package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

// syncGate stands between a FileJournal and its file's syncs: while
// armed, each Sync announces itself on started and blocks until release
// gives it a result (nil: the real sync runs; an error: it fails with it).
type syncGate struct {
	armed   atomic.Bool
	started chan struct{}
	release chan error
}

func newSyncGate() *syncGate {
	return &syncGate{started: make(chan struct{}, 16), release: make(chan error, 16)}
}

func (g *syncGate) wrap(f *os.File) client.JournalFile { return &gatedFile{File: f, gate: g} }

type gatedFile struct {
	*os.File
	gate *syncGate
}

func (f *gatedFile) Sync() error {
	if f.gate.armed.Load() {
		f.gate.started <- struct{}{}
		if err := <-f.gate.release; err != nil {
			return err
		}
	}
	return f.File.Sync()
}

// gatedOutbox returns an outbox over a FileJournal whose syncs pass the
// gate (armed), delivering with cfg. With plain, the outbox sees the
// journal through the Journal interface alone. The gate is disarmed and
// every blocked sync released when the test ends.
func gatedOutbox(t *testing.T, cfg client.Config, plain bool) (*client.Outbox, *client.FileJournal, *syncGate) {
	t.Helper()
	g := newSyncGate()
	j, err := client.OpenFileJournalWrapped(filepath.Join(t.TempDir(), "journal"), client.FileJournalConfig{}, g.wrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	t.Cleanup(func() { g.armed.Store(false); close(g.release) }) // runs first
	g.armed.Store(true)
	s, err := client.New(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var journal client.Journal = j
	if plain {
		journal = plainJournal{j}
	}
	return client.NewOutbox(s, journal), j, g
}

// plainJournal is a Journal with nothing but the interface's methods.
type plainJournal struct{ client.Journal }

// arrivals is a receiver that answers each request with the next status
// of its script (then 201) and reports each key it receives.
type arrivals struct {
	mu     sync.Mutex
	script []int
	keys   chan string
}

func newArrivals(script ...int) *arrivals {
	return &arrivals{script: script, keys: make(chan string, 64)}
}

func (a *arrivals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	a.mu.Lock()
	status := http.StatusCreated
	if len(a.script) > 0 {
		status, a.script = a.script[0], a.script[1:]
	}
	a.mu.Unlock()
	a.keys <- r.Header.Get("Idempotency-Key")
	w.WriteHeader(status)
}

// delivered is the outcome of a Deliver run in the background.
type delivered struct {
	res client.Result
	err error
}

func deliverAsync(ob *client.Outbox, d client.Delivery) <-chan delivered {
	done := make(chan delivered, 1)
	go func() {
		res, err := ob.Deliver(context.Background(), d)
		done <- delivered{res, err}
	}()
	return done
}

func waitFor[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// quiet asserts that nothing arrives on c for a while.
func quiet[T any](t *testing.T, c <-chan T, what string) {
	t.Helper()
	select {
	case v := <-c:
		t.Fatalf("%s: %v", what, v)
	case <-time.After(100 * time.Millisecond):
	}
}

func entryOf(j *client.FileJournal, key string) (client.JournalEntry, bool) {
	for _, e := range j.Entries() {
		if e.Key == key {
			return e, true
		}
	}
	return client.JournalEntry{}, false
}

// TestOutboxFirstAttemptDuringSync: over a FileJournal, the first attempt
// goes out while the record's sync runs, and Deliver does not return
// before that sync is done; the entry is then marked delivered.
func TestOutboxFirstAttemptDuringSync(t *testing.T) {
	rv := newArrivals()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	ob, j, g := gatedOutbox(t, withClock(newFakeClock(), client.Config{}), false)
	done := deliverAsync(ob, client.Delivery{URL: srv.URL, Key: "k1", Body: []byte(`{"n":1}`)})

	waitFor(t, g.started, "the record's sync")
	select {
	case <-rv.keys:
	case <-time.After(30 * time.Second):
		t.Fatal("the first attempt did not reach the receiver while the record's sync ran")
	}
	quiet(t, done, "Deliver returned before the record's sync was done")
	g.release <- nil
	got := waitFor(t, done, "Deliver")
	if got.err != nil || got.res.StatusCode != http.StatusCreated || got.res.Attempts != 1 {
		t.Fatalf("Deliver = %+v, %v; want 201 after 1 attempt", got.res, got.err)
	}
	if e, _ := entryOf(j, "k1"); e.Outcome != client.OutcomeDelivered {
		t.Errorf("entry outcome %q, want %q", e.Outcome, client.OutcomeDelivered)
	}
}

// TestOutboxNoRetryBeforeSync: a first attempt that fails retryably while
// the record's sync runs is not retried (nor waited on, nor dead-lettered)
// until the sync is done; then the retry goes out.
func TestOutboxNoRetryBeforeSync(t *testing.T) {
	rv := newArrivals(http.StatusServiceUnavailable)
	srv := httptest.NewServer(rv)
	defer srv.Close()
	sink := &memSink{}
	clock := newFakeClock()
	ob, j, g := gatedOutbox(t, withClock(clock, client.Config{MaxAttempts: 3, Rand: newSource(1), DeadLetter: sink}), false)
	done := deliverAsync(ob, client.Delivery{URL: srv.URL, Key: "k1", Body: []byte(`{"n":1}`)})

	waitFor(t, g.started, "the record's sync")
	waitFor(t, rv.keys, "the first attempt")
	quiet(t, rv.keys, "a retry went out before the record's sync was done")
	if n := len(clock.Sleeps()); n != 0 || len(sink.All()) != 0 {
		t.Fatalf("%d retry waits, %d dead letters before the record's sync was done; want none", n, len(sink.All()))
	}
	g.release <- nil
	got := waitFor(t, done, "Deliver")
	if got.err != nil || got.res.Attempts != 2 {
		t.Fatalf("Deliver = %+v, %v; want a success on the retry", got.res, got.err)
	}
	if e, _ := entryOf(j, "k1"); e.Outcome != client.OutcomeDelivered {
		t.Errorf("entry outcome %q, want %q", e.Outcome, client.OutcomeDelivered)
	}
}

// TestOutboxSyncFailsAfterSuccess: when the record's sync fails but the
// first attempt succeeded, the receiver holds the event: Deliver succeeds,
// and the sender's logger warns. The journal, whose file is in doubt
// after a failed sync, cannot take the done mark: the entry stays pending
// in it, and a re-send after a reopen is a replay.
func TestOutboxSyncFailsAfterSuccess(t *testing.T) {
	rv := newArrivals()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sink := &memSink{}
	ob, j, g := gatedOutbox(t, withClock(newFakeClock(), client.Config{Logger: logger, DeadLetter: sink}), false)
	done := deliverAsync(ob, client.Delivery{URL: srv.URL, Key: "k1", Body: []byte(`{"n":1}`)})

	waitFor(t, g.started, "the record's sync")
	waitFor(t, rv.keys, "the first attempt")
	g.release <- syscall.EIO
	got := waitFor(t, done, "Deliver")
	if got.err != nil || got.res.StatusCode != http.StatusCreated || got.res.Attempts != 1 {
		t.Fatalf("Deliver = %+v, %v; want the 201 of the first attempt", got.res, got.err)
	}
	if len(sink.All()) != 0 {
		t.Errorf("a delivered event was dead-lettered: %+v", sink.All())
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), syscall.EIO.Error()) {
		t.Errorf("log = %q; want a warning naming the sync's error", logs.String())
	}
	if e, ok := entryOf(j, "k1"); !ok || e.Outcome != "" {
		t.Errorf("entry = %+v (found %v); want it remembered, pending", e, ok)
	}
}

// TestOutboxSyncFailsAfterRetryableFailure: when the record's sync fails
// and the first attempt failed retryably, the delivery does not go on
// retrying on a journal that cannot hold it: no retry, no retry wait, and
// it is dead-lettered as not journaled, with the first attempt's answer.
func TestOutboxSyncFailsAfterRetryableFailure(t *testing.T) {
	rv := newArrivals(http.StatusServiceUnavailable)
	srv := httptest.NewServer(rv)
	defer srv.Close()
	sink := &memSink{}
	clock := newFakeClock()
	ob, _, g := gatedOutbox(t, withClock(clock, client.Config{MaxAttempts: 3, Rand: newSource(1), DeadLetter: sink}), false)
	d := client.Delivery{URL: srv.URL, Key: "k1", Body: []byte(`{"n":1}`)}
	done := deliverAsync(ob, d)

	waitFor(t, g.started, "the record's sync")
	waitFor(t, rv.keys, "the first attempt")
	g.release <- syscall.EIO
	got := waitFor(t, done, "Deliver")
	var derr *client.DeliveryError
	if !errors.Is(got.err, client.ErrNotJournaled) || !errors.Is(got.err, syscall.EIO) || !errors.As(got.err, &derr) || got.res.Attempts != 1 {
		t.Fatalf("Deliver = %+v, %v; want ErrNotJournaled wrapping EIO after 1 attempt", got.res, got.err)
	}
	select {
	case k := <-rv.keys:
		t.Errorf("a retry of %s went out on a journal whose sync failed", k)
	default:
	}
	if n := len(clock.Sleeps()); n != 0 {
		t.Errorf("%d retry waits; want none", n)
	}
	dls := sink.All()
	if len(dls) != 1 || dls[0].Reason != "not-journaled" || dls[0].Attempts != 1 || dls[0].LastStatus != http.StatusServiceUnavailable ||
		string(dls[0].Body) != string(d.Body) {
		t.Errorf("dead letters = %+v; want one, not-journaled, 1 attempt, last status 503, the event's bytes", dls)
	}
}

// TestOutboxCanceledWaitsForSync: a delivery whose context is done before
// its first attempt is not dead-lettered, nor returned, before its
// record's sync is done; then it ends as before (canceled), or, if the
// sync failed, as not journaled.
func TestOutboxCanceledWaitsForSync(t *testing.T) {
	for name, syncErr := range map[string]error{"synced": nil, "sync failed": syscall.EIO} {
		t.Run(name, func(t *testing.T) {
			rv := newArrivals()
			srv := httptest.NewServer(rv)
			defer srv.Close()
			sink := &memSink{}
			ob, _, g := gatedOutbox(t, withClock(newFakeClock(), client.Config{DeadLetter: sink}), false)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			done := make(chan delivered, 1)
			go func() {
				res, err := ob.Deliver(ctx, client.Delivery{URL: srv.URL, Key: "k1", Body: []byte(`{"n":1}`)})
				done <- delivered{res, err}
			}()
			waitFor(t, g.started, "the record's sync")
			quiet(t, done, "Deliver returned before the record's sync was done")
			if n := len(sink.All()); n != 0 {
				t.Fatalf("%d dead letters before the record's sync was done", n)
			}
			g.release <- syncErr
			got := waitFor(t, done, "Deliver")
			want, reason := error(context.Canceled), "canceled"
			if syncErr != nil {
				want, reason = client.ErrNotJournaled, "not-journaled"
			}
			if dls := sink.All(); !errors.Is(got.err, want) || len(dls) != 1 || dls[0].Reason != reason || dls[0].Attempts != 0 {
				t.Errorf("Deliver = %v, dead letters %+v; want %v, one dead letter %q with 0 attempts", got.err, dls, want, reason)
			}
			select {
			case k := <-rv.keys:
				t.Errorf("%s was sent with its context done", k)
			default:
			}
		})
	}
}

// TestOutboxPlainJournalRecordsFirst: a Journal that is not a FileJournal
// (here one seen through the interface alone) keeps the interface's
// order: the record is durable before the first attempt.
func TestOutboxPlainJournalRecordsFirst(t *testing.T) {
	rv := newArrivals()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	ob, _, g := gatedOutbox(t, withClock(newFakeClock(), client.Config{}), true)
	done := deliverAsync(ob, client.Delivery{URL: srv.URL, Key: "k1", Body: []byte(`{"n":1}`)})

	waitFor(t, g.started, "the record's sync")
	quiet(t, rv.keys, "a plain Journal's delivery was sent before its record's sync was done")
	g.release <- nil
	waitFor(t, rv.keys, "the first attempt")
	if got := waitFor(t, done, "Deliver"); got.err != nil {
		t.Fatal(got.err)
	}
}

// durableFile counts the bytes written to a journal's file and, at each
// sync, those it made durable: the bytes written before it started.
type durableFile struct {
	*os.File
	mu               *sync.Mutex
	written, durable *int64
}

func (f *durableFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.mu.Lock()
	*f.written += int64(n)
	f.mu.Unlock()
	return n, err
}

func (f *durableFile) Sync() error {
	f.mu.Lock()
	w := *f.written
	f.mu.Unlock()
	err := f.File.Sync()
	if err == nil {
		f.mu.Lock()
		*f.durable = max(*f.durable, w)
		f.mu.Unlock()
	}
	return err
}

// TestOutboxOverlapConcurrent runs many Delivers at once over one
// FileJournal (run with -race): every record is written to the file
// before its first attempt reaches the receiver and is durable before its
// Deliver returns, and concurrent records share their syncs.
func TestOutboxOverlapConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	var (
		mu               sync.Mutex
		written, durable int64
	)
	wrap := func(f *os.File) client.JournalFile {
		return &durableFile{File: f, mu: &mu, written: &written, durable: &durable}
	}
	j, err := client.OpenFileJournalWrapped(path, client.FileJournalConfig{}, wrap)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	// lineEnd is where the record line of key ends in the file, 0 if it
	// is not there.
	lineEnd := func(key string) int64 {
		data, _ := os.ReadFile(path)
		var off int64
		for line := range bytes.Lines(data) {
			off += int64(len(line))
			if bytes.Contains(line, []byte(`"op":"record"`)) && bytes.Contains(line, []byte(`"key":"`+key+`"`)) {
				return off
			}
		}
		return 0
	}
	var unwritten atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lineEnd(r.Header.Get("Idempotency-Key")) == 0 {
			unwritten.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	s, err := client.New(nil, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ob := client.NewOutbox(s, j)
	const goroutines, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				key := "g" + string(rune('a'+g)) + "-" + string(rune('a'+i))
				if _, err := ob.Deliver(context.Background(), client.Delivery{URL: srv.URL, Key: key, Body: []byte(`{}`)}); err != nil {
					errs <- err
					continue
				}
				end := lineEnd(key)
				mu.Lock()
				d := durable
				mu.Unlock()
				if end == 0 || end > d {
					errs <- errors.New(key + ": Deliver returned before its record was synced")
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := unwritten.Load(); n != 0 {
		t.Errorf("%d first attempts reached the receiver before their record was written", n)
	}
	if p, _ := j.Pending(context.Background()); len(p) != 0 {
		t.Errorf("%d entries pending after every delivery succeeded", len(p))
	}
	if syncs := j.Syncs(); syncs >= goroutines*each {
		t.Errorf("%d syncs for %d concurrent records; want them shared", syncs, goroutines*each)
	}
}
