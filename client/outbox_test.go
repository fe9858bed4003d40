package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// replayer stands in for the geoidem middleware: the first request under
// a key executes (counted), a later one with the same bytes is replayed,
// one with other bytes is refused 422. Until heal, it answers 503.
type replayer struct {
	mu        sync.Mutex
	down      bool
	refuse    bool // answer 400 to new keys, recorded
	sums      map[string][32]byte
	status    map[string]int
	executed  map[string]int
	mismatch  int
	requests  int
	lastHeads http.Header
}

func newReplayer() *replayer {
	return &replayer{sums: map[string][32]byte{}, status: map[string]int{}, executed: map[string]int{}}
}

func (rv *replayer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key, sum := r.Header.Get("Idempotency-Key"), sha256.Sum256(body)
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.lastHeads = r.Header.Clone()
	rv.requests++
	if rv.down {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if s, ok := rv.sums[key]; ok {
		if s != sum {
			rv.mismatch++
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			io.WriteString(w, `{"type":"https://github.com/geoidem/geoidem/blob/main/docs/problems.md#key-reused","title":"Idempotency key reused","status":422}`)
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(rv.status[key])
		return
	}
	rv.sums[key] = sum
	rv.status[key] = http.StatusCreated
	if rv.refuse {
		rv.status[key] = http.StatusBadRequest
	} else {
		rv.executed[key]++
	}
	w.WriteHeader(rv.status[key])
}

func (rv *replayer) set(f func(*replayer)) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	f(rv)
}

func newOutbox(t *testing.T, url, path string, sink client.DeadLetterSink) (*client.Outbox, *client.FileJournal) {
	t.Helper()
	s, err := client.New(nil, withClock(newFakeClock(), client.Config{MaxAttempts: 2, Rand: newSource(1), DeadLetter: sink}))
	if err != nil {
		t.Fatal(err)
	}
	j := openJournal(t, path, client.FileJournalConfig{})
	return client.NewOutbox(s, j), j
}

// TestOutboxRerun: a second outbox on the same journal (a re-run, or the
// sender restarted after a crash) sends the bytes first recorded under the
// key, whatever it is given: the receiver replays, never refuses, never
// executes twice.
func TestOutboxRerun(t *testing.T) {
	ctx := context.Background()
	rv := newReplayer()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "journal")
	d := client.Delivery{URL: srv.URL + "/features", Key: "event-1", Body: []byte(`{"observation_time":"first"}`)}

	ob, j := newOutbox(t, srv.URL, path, nil)
	if res, err := ob.Deliver(ctx, d); err != nil || res.Replayed {
		t.Fatalf("first delivery: %+v, %v", res, err)
	}
	if p, _ := j.Pending(ctx); len(p) != 0 {
		t.Errorf("%d entries pending after a delivery", len(p))
	}
	j.Close()

	ob, _ = newOutbox(t, srv.URL, path, nil)
	d.Body = []byte(`{"observation_time":"second"}`) // stamped anew by a re-run
	res, err := ob.Deliver(ctx, d)
	if err != nil || !res.Replayed {
		t.Fatalf("re-run: %+v, %v; want a replay", res, err)
	}
	if rv.mismatch != 0 || rv.executed["event-1"] != 1 {
		t.Errorf("%d key reuses, %d executions; want 0 and 1", rv.mismatch, rv.executed["event-1"])
	}
}

// TestOutboxCrashResume: an entry recorded before a crash (no attempt, or
// an attempt whose answer was lost) is pending when the journal is opened
// again, and Resume delivers it under its key with its bytes.
func TestOutboxCrashResume(t *testing.T) {
	ctx := context.Background()
	rv := newReplayer()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path, client.FileJournalConfig{})
	body := []byte(`{"n":1}`)
	if _, err := j.Record(ctx, client.JournalEntry{Delivery: client.Delivery{URL: srv.URL, Key: "k", Body: body}}); err != nil {
		t.Fatal(err)
	}
	j.Close() // the crash: recorded, never marked done

	ob, j := newOutbox(t, srv.URL, path, nil)
	n, err := ob.Resume(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Resume = %d, %v", n, err)
	}
	if rv.sums["k"] != sha256.Sum256(body) {
		t.Error("Resume sent other bytes")
	}
	if p, _ := j.Pending(ctx); len(p) != 0 {
		t.Errorf("%d pending after Resume", len(p))
	}
}

// TestOutboxOutcomes: an entry is marked done when the delivery ends
// (delivered, refused permanently, dead-lettered) and stays pending when
// it ends with nobody holding it (no dead-letter sink).
func TestOutboxOutcomes(t *testing.T) {
	ctx := context.Background()
	rv := newReplayer()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	dir := t.TempDir()

	rv.set(func(rv *replayer) { rv.refuse = true })
	ob, j := newOutbox(t, srv.URL, filepath.Join(dir, "a"), nil)
	if _, err := ob.Deliver(ctx, client.Delivery{URL: srv.URL, Key: "bad", Body: []byte("{}")}); !errors.Is(err, client.ErrPermanent) {
		t.Fatalf("err = %v, want permanent", err)
	}
	rv.set(func(rv *replayer) { rv.refuse, rv.down = false, true })
	if _, err := ob.Deliver(ctx, client.Delivery{URL: srv.URL, Key: "down", Body: []byte("{}")}); !errors.Is(err, client.ErrExhausted) {
		t.Fatalf("err = %v, want exhausted", err)
	}
	p, _ := j.Pending(ctx)
	if len(p) != 1 || p[0].Key != "down" {
		t.Errorf("pending = %v, want only the exhausted delivery without a sink", p)
	}

	sink := &memSink{}
	ob, j = newOutbox(t, srv.URL, filepath.Join(dir, "b"), sink)
	ob.Deliver(ctx, client.Delivery{URL: srv.URL, Key: "down", Body: []byte("{}")})
	if p, _ := j.Pending(ctx); len(p) != 0 || len(sink.All()) != 1 {
		t.Errorf("pending %v with %d dead letters; want the dead-lettered entry done", p, len(sink.All()))
	}
	sink.fail = errors.New("disk full")
	ob.Deliver(ctx, client.Delivery{URL: srv.URL, Key: "down2", Body: []byte("{}")})
	if p, _ := j.Pending(ctx); len(p) != 1 || p[0].Key != "down2" {
		t.Errorf("pending = %v, want the entry the sink failed to take", p)
	}
}

// TestOutboxRedrive: a dead letter is re-driven under its key with its
// payload and headers; a journal that holds other bytes under that key
// sends nothing.
func TestOutboxRedrive(t *testing.T) {
	ctx := context.Background()
	rv := newReplayer()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	sink := &memSink{}
	ob, _ := newOutbox(t, srv.URL, filepath.Join(t.TempDir(), "j"), sink)
	rv.set(func(rv *replayer) { rv.down = true })
	d := client.Delivery{URL: srv.URL + "/features", Key: "k", Body: []byte(`{"n":1}`), Header: http.Header{"X-Tenant": {"t1"}}}
	ob.Deliver(ctx, d)
	dls := sink.All()
	if len(dls) != 1 || dls[0].Header.Get("X-Tenant") != "t1" {
		t.Fatalf("dead letters = %+v", dls)
	}
	var buf bytes.Buffer
	sinkFile := client.NewJSONLinesSink(&buf)
	sinkFile.Put(ctx, dls[0])
	read, err := client.ReadDeadLetters(&buf)
	if err != nil || len(read) != 1 {
		t.Fatalf("ReadDeadLetters = %v, %v", read, err)
	}

	rv.set(func(rv *replayer) { rv.down = false })
	if _, err := ob.Redrive(ctx, read[0]); err != nil {
		t.Fatal(err)
	}
	if rv.sums["k"] != sha256.Sum256(d.Body) || rv.lastHeads.Get("X-Tenant") != "t1" {
		t.Errorf("re-drive sent other bytes or lost the header %v", rv.lastHeads)
	}
	other := read[0]
	other.Body = []byte(`{"n":2}`)
	if _, err := ob.Redrive(ctx, other); !errors.Is(err, client.ErrJournalConflict) {
		t.Errorf("re-drive of other bytes: %v, want ErrJournalConflict", err)
	}
	if rv.mismatch != 0 {
		t.Error("a conflicting re-drive reached the receiver")
	}
	s, _ := client.New(nil, client.Config{})
	res, err := s.Deliver(ctx, read[0].Delivery)
	if err != nil || !res.Replayed {
		t.Errorf("Sender.Deliver of the dead letter's Delivery: %+v, %v; want a replay", res, err)
	}
}

// TestOutboxKeyReusedIsSentEarlier: a re-run without
// the journal (another host, a new container, the journal deleted) stamps
// a new observation_time, so the receiver, which executed the first
// stamp under the same key, answers 422 key-reused. Through an outbox,
// whose key names the event (the first bytes sent under it win), that is
// the event sent earlier with another payload: not a permanent failure,
// not dead-lettered, and marked done in the journal as such. A bare
// Sender, whose keys mean what its caller says, still reports it as
// permanent.
func TestOutboxKeyReusedIsSentEarlier(t *testing.T) {
	ctx := context.Background()
	rv := newReplayer()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	dir := t.TempDir()
	d := client.Delivery{URL: srv.URL + "/features", Key: "event-1", Body: []byte(`{"observation_time":"first"}`)}

	ob, j := newOutbox(t, srv.URL, filepath.Join(dir, "first"), nil)
	if _, err := ob.Deliver(ctx, d); err != nil {
		t.Fatalf("first run: %v", err)
	}
	j.Close()

	// The journal is gone: the re-run records the event anew, stamped
	// anew, and its journal now holds the second stamp.
	for run := range 2 {
		sink := &memSink{}
		ob, j := newOutbox(t, srv.URL, filepath.Join(dir, "second"), sink)
		d.Body = []byte(`{"observation_time":"second"}`)
		res, err := ob.Deliver(ctx, d)
		var de *client.DeliveryError
		if !errors.Is(err, client.ErrSentEarlier) || errors.Is(err, client.ErrPermanent) || !errors.As(err, &de) || de.ReasonName() != "sent-earlier" {
			t.Errorf("run %d: err = %v; want reason sent-earlier, not permanent", run+2, err)
		}
		var se *client.StatusError
		if res.StatusCode != http.StatusUnprocessableEntity || !errors.As(err, &se) || se.Problem == nil {
			t.Errorf("run %d: result %+v; want the 422 key-reused answer", run+2, res)
		}
		if dls := sink.All(); len(dls) != 0 {
			t.Errorf("run %d: dead-lettered %+v", run+2, dls)
		}
		if es := j.Entries(); len(es) != 1 || es[0].Outcome != client.OutcomeSentEarlier {
			t.Errorf("run %d: journal entries %+v; want one, done as sent-earlier", run+2, es)
		}
		j.Close()
	}
	if rv.executed["event-1"] != 1 {
		t.Errorf("%d executions, want 1", rv.executed["event-1"])
	}

	s := newSender(t, http.DefaultTransport, withClock(newFakeClock(), client.Config{}))
	if _, err := s.Deliver(ctx, d); !errors.Is(err, client.ErrPermanent) {
		t.Errorf("bare Sender: err = %v; want ErrPermanent", err)
	}
}

// TestOutboxDoesNotResendPermanent: a re-run used to
// send again an event its journal records as refused permanently, to be
// refused again and dead-lettered again. Deliver now sends it no more:
// it fails as permanent, refused earlier, with no attempt and no new dead
// letter. Resend, and a re-drive of its dead letter, send it when asked.
func TestOutboxDoesNotResendPermanent(t *testing.T) {
	ctx := context.Background()
	rv := newReplayer()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	rv.set(func(rv *replayer) { rv.refuse = true })
	path := filepath.Join(t.TempDir(), "journal")
	d := client.Delivery{URL: srv.URL + "/features", Key: "bad", Body: []byte(`{"n":1}`)}
	requests := func() int {
		rv.mu.Lock()
		defer rv.mu.Unlock()
		return rv.requests
	}

	sink := &memSink{}
	ob, j := newOutbox(t, srv.URL, path, sink)
	if _, err := ob.Deliver(ctx, d); !errors.Is(err, client.ErrPermanent) {
		t.Fatalf("first run: %v, want permanent", err)
	}
	j.Close()

	ob, j = newOutbox(t, srv.URL, path, sink) // the re-run
	res, err := ob.Deliver(ctx, d)
	if !errors.Is(err, client.ErrPermanent) || res.Attempts != 0 {
		t.Errorf("re-run: %+v, %v; want permanent after 0 attempts", res, err)
	}
	if n := requests(); n != 1 {
		t.Errorf("%d requests after the re-run, want 1: the refused event was sent again", n)
	}
	if n := len(sink.All()); n != 1 {
		t.Errorf("%d dead letters after the re-run, want 1", n)
	}

	if _, err := ob.Resend(ctx, d); !errors.Is(err, client.ErrPermanent) || errors.Is(err, client.ErrRefusedEarlier) {
		t.Errorf("Resend: %v; want the receiver's answer, permanent", err)
	}
	if _, err := ob.Redrive(ctx, sink.All()[0]); !errors.Is(err, client.ErrPermanent) || errors.Is(err, client.ErrRefusedEarlier) {
		t.Errorf("Redrive: %v; want the receiver's answer, permanent", err)
	}
	if n := requests(); n != 3 {
		t.Errorf("%d requests, want 3: Resend and Redrive send", n)
	}
	if es := j.Entries(); len(es) != 1 || es[0].Outcome != client.OutcomePermanent {
		t.Errorf("journal entries %+v", es)
	}
}

func TestReadDeadLettersErrors(t *testing.T) {
	for in, want := range map[string]string{
		"{}\n":         "line 1: no url or key",
		"\n\nnot json": "line 3",
	} {
		_, err := client.ReadDeadLetters(bytes.NewReader([]byte(in)))
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
