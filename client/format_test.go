package client_test

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/problem"
)

// The files under testdata/format were written by the sender of the first
// release of these formats. The tests below read them, and write the same
// entries and dead letters anew and compare the bytes, so that the files a
// sender has on disk keep working across releases in both directions: an
// upgraded sender reads what an older one wrote, and an older one (a
// rollback) reads what an upgraded one writes.

var updateFormat = flag.Bool("update-format", false, "rewrite testdata/format (only for a new format version)")

const (
	journalFixture          = "testdata/format/journal-v1"
	compactedJournalFixture = "testdata/format/journal-compacted-v1"
	deadLetterFixture       = "testdata/format/deadletters-v1.jsonl"
)

// formatEntries are the journal's entries as the fixture holds them, in
// the order they were recorded, with their outcomes.
func formatEntries() []client.JournalEntry {
	t0 := epoch
	return []client.JournalEntry{
		{Delivery: client.Delivery{Method: "POST", URL: "https://receiver.test/features", Key: "k-json", ContentType: "application/geo+json",
			Header: http.Header{"X-Tenant": {"t1"}}, Body: []byte(`{"type":"Feature","id":"a","properties":{"n":1}}`)},
			Recorded: t0, Outcome: client.OutcomeDelivered, Ended: t0.Add(time.Second)},
		{Delivery: client.Delivery{Method: "PUT", URL: "https://receiver.test/features/b", Key: `key with "quotes"`, ContentType: "application/json",
			Body: []byte("\x00\xffnot json <&>")}, Recorded: t0.Add(2 * time.Second)},
		{Delivery: client.Delivery{Method: "POST", URL: "https://receiver.test/features", Key: "k-empty", ContentType: "application/json",
			Body: []byte{}}, Recorded: t0.Add(3 * time.Second), Outcome: client.OutcomePermanent, Ended: t0.Add(4 * time.Second)},
		{Delivery: client.Delivery{Method: "POST", URL: "https://receiver.test/features", Key: "k-spaced", ContentType: "application/json",
			Header: http.Header{"X-A": {"1", "2"}, "X-B": {"b"}}, Body: []byte(`{ "not": "compact" }`)},
			Recorded: t0.Add(5 * time.Second)},
	}
}

// writeFormatJournal records formatEntries into a new journal at path, with
// the done marks, on a fake clock, and closes it. With compactAt 5 the
// journal compacts at the second done mark: the file then holds compacted
// records (a done entry in one line) and a record appended after them.
func writeFormatJournal(t *testing.T, path string, compactAt int) {
	t.Helper()
	ctx := context.Background()
	clock := newFakeClock()
	cfg := client.WithCompactAt(client.FileJournalConfig{Retention: 100 * 365 * 24 * time.Hour}, compactAt)
	j, err := client.OpenFileJournal(path, withClock(clock, cfg))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range formatEntries() {
		clock.Advance(e.Recorded.Sub(clock.Now()))
		rec := e
		rec.Recorded, rec.Outcome, rec.Ended = time.Time{}, "", time.Time{}
		if _, err := j.Record(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if e.Outcome != "" {
			clock.Advance(e.Ended.Sub(clock.Now()))
			if err := j.Done(ctx, rec, e.Outcome); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestJournalFormat: a journal written by the first release, compacted or
// not, opens with every entry, its bytes and its outcome, and the journal
// writes the same entries to the same bytes.
func TestJournalFormat(t *testing.T) {
	t.Run("appended", func(t *testing.T) { testJournalFormat(t, journalFixture, 0) })
	t.Run("compacted", func(t *testing.T) { testJournalFormat(t, compactedJournalFixture, 5) })
}

func testJournalFormat(t *testing.T, journalFixture string, compactAt int) {
	path := filepath.Join(t.TempDir(), "journal")
	writeFormatJournal(t, path, compactAt)
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if *updateFormat {
		if err := os.WriteFile(journalFixture, written, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fixture, err := os.ReadFile(journalFixture)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, fixture) {
		t.Errorf("the journal writes\n%s\nwant the bytes of %s\n%s", written, journalFixture, fixture)
	}

	// Open a copy: opening preallocates, and Close trims it again.
	cp := filepath.Join(t.TempDir(), "journal")
	if err := os.WriteFile(cp, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	j := openJournal(t, cp, client.FileJournalConfig{Retention: 100 * 365 * 24 * time.Hour})
	got, want := j.Entries(), formatEntries()
	if len(got) != len(want) {
		t.Fatalf("Entries of %s: %d, want %d: %+v", journalFixture, len(got), len(want), got)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("entry %d of %s:\n got %+v\nwant %+v", i, journalFixture, got[i], want[i])
		}
	}
	pending, err := j.Pending(context.Background())
	if err != nil || len(pending) != 2 || pending[0].Key != want[1].Key || pending[1].Key != want[3].Key {
		t.Errorf("Pending of %s = %+v, %v; want entries 1 and 3", journalFixture, pending, err)
	}
}

// formatDeadLetters are the dead letters the fixture holds.
func formatDeadLetters() []client.DeadLetter {
	return []client.DeadLetter{
		{Delivery: client.Delivery{URL: "https://receiver.test/features", Method: "POST", Key: "k-json",
			ContentType: "application/geo+json", Header: http.Header{"X-Tenant": {"t1"}},
			Body: []byte(`{"type":"Feature","id":"a","properties":{"n":1}}`)},
			Time: epoch, Attempts: 6, LastStatus: 503,
			Reason: "exhausted", Error: `client: delivery of key "k-json": attempts exhausted after 6 attempts: client: 503 Service Unavailable`},
		{Delivery: client.Delivery{URL: "https://receiver.test/features/b", Method: "PUT", Key: `key with "quotes"`,
			ContentType: "application/json", Body: []byte("\x00\xffnot json <&>")},
			Time: epoch.Add(time.Minute), Attempts: 1, LastStatus: 422,
			Reason: "permanent", Error: "client: delivery of key \"key with \\\"quotes\\\"\": permanent failure after 1 attempt",
			Problem: &problem.Details{Type: "https://geoidem.dev/problems#invalid-geojson", Title: "Invalid GeoJSON", Status: 422,
				Errors: []problem.Error{{Pointer: "/geometry", Detail: "missing"}}}},
		{Delivery: client.Delivery{URL: "https://receiver.test/features", Method: "POST", Key: "k-empty",
			ContentType: "application/json", Body: []byte{}},
			Time: epoch.Add(2 * time.Minute), Reason: "not-journaled",
			Error: `client: delivery of key "k-empty": not journaled after 0 attempts: client: journal: disk full`},
		{Delivery: client.Delivery{URL: "https://receiver.test/features", Method: "POST", Key: "k-spaced",
			ContentType: "application/json", Header: http.Header{"X-A": {"1", "2"}},
			Body: []byte(`{ "not": "compact" }`)},
			Time: epoch.Add(3 * time.Minute), Attempts: 2, Reason: "deadline", Error: "client: deadline"},
	}
}

// TestDeadLetterFormat: a dead-letter file written by the first release
// reads back whole, payloads byte for byte, and the sink writes the same
// dead letters to the same bytes.
func TestDeadLetterFormat(t *testing.T) {
	var buf bytes.Buffer
	sink := client.NewJSONLinesSink(&buf)
	for _, dl := range formatDeadLetters() {
		if err := sink.Put(context.Background(), dl); err != nil {
			t.Fatal(err)
		}
	}
	if *updateFormat {
		if err := os.WriteFile(deadLetterFixture, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fixture, err := os.ReadFile(deadLetterFixture)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), fixture) {
		t.Errorf("the sink writes\n%s\nwant the bytes of %s\n%s", buf.Bytes(), deadLetterFixture, fixture)
	}

	got, err := client.ReadDeadLetters(bytes.NewReader(fixture))
	if err != nil {
		t.Fatal(err)
	}
	want := formatDeadLetters()
	// An empty body is written as none, and reads back as nil.
	want[2].Body = nil
	if len(got) != len(want) {
		t.Fatalf("ReadDeadLetters of %s: %d, want %d", deadLetterFixture, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("dead letter %d of %s:\n got %+v\nwant %+v", i, deadLetterFixture, got[i], want[i])
		}
	}
}
