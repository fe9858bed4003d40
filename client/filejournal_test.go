package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

func openJournal(t *testing.T, path string, cfg client.FileJournalConfig) *client.FileJournal {
	t.Helper()
	j, err := client.OpenFileJournal(path, cfg)
	if err != nil {
		t.Fatalf("OpenFileJournal: %v", err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func entry(key, body string) client.JournalEntry {
	return client.JournalEntry{Delivery: client.Delivery{URL: "http://receiver.test/features", Key: key, Body: []byte(body),
		ContentType: "application/geo+json", Header: http.Header{"X-Tenant": {"t1"}}}}
}

// TestFileJournalFirstRecordWins: a second Record of the same method, URL
// and key returns the bytes first recorded, before and after a reopen.
func TestFileJournalFirstRecordWins(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path, withClock(newFakeClock(), client.FileJournalConfig{}))
	first, err := j.Record(ctx, entry("k", `{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(first.Body) != `{"n":1}` || first.Method != "POST" || !first.Recorded.Equal(epoch) {
		t.Fatalf("Record = %+v", first)
	}
	got, err := j.Record(ctx, entry("k", `{"n":2}`))
	if err != nil || string(got.Body) != `{"n":1}` {
		t.Fatalf("second Record = %s, %v; want the first bytes", got.Body, err)
	}
	other := entry("k", `{"n":3}`)
	other.URL = "http://receiver.test/other"
	if got, _ := j.Record(ctx, other); string(got.Body) != `{"n":3}` {
		t.Errorf("another URL shares the entry: %s", got.Body)
	}
	binary := entry("b", "\x00\xffnot json")
	j.Record(ctx, binary)
	j.Close()

	j = openJournal(t, path, client.FileJournalConfig{})
	got, err = j.Record(ctx, entry("k", `{"n":4}`))
	if err != nil || string(got.Body) != `{"n":1}` || got.Header.Get("X-Tenant") != "t1" || got.ContentType != "application/geo+json" {
		t.Fatalf("after reopen: %+v, %v; want the first bytes, header and content type", got, err)
	}
	p, _ := j.Pending(ctx)
	if len(p) != 3 || !bytes.Equal(p[2].Body, binary.Body) {
		t.Fatalf("pending after reopen = %d entries; binary body %q", len(p), p[len(p)-1].Body)
	}
}

// TestFileJournalTornLastLine: a torn or unparseable final line (a crash
// in the middle of an append) is dropped and truncated on open; the
// entries before it are kept and later appends land on a clean line.
func TestFileJournalTornLastLine(t *testing.T) {
	ctx := context.Background()
	for name, tail := range map[string]string{
		"torn":       `{"op":"record","method":"POST","url":"http://receiver.test/features","key":"torn","bo`,
		"garbage":    "\x00\x00\x00\x00",
		"unparsable": "{not json}\n",
	} {
		t.Run(name, func(t *testing.T) {
			path, good := journalWithTail(t, tail)
			j := openJournal(t, path, client.FileJournalConfig{})
			if after, _ := os.ReadFile(path); !bytes.Equal(after, good) {
				t.Errorf("file after open = %q, want the torn tail truncated: %q", after, good)
			}
			if _, err := j.Record(ctx, entry("b", `{"b":1}`)); err != nil {
				t.Fatal(err)
			}
			j.Close()
			j = openJournal(t, path, client.FileJournalConfig{})
			p, _ := j.Pending(ctx)
			if len(p) != 2 || p[0].Key != "a" || p[1].Key != "b" {
				t.Errorf("pending = %v, want a and b", p)
			}
		})
	}
	t.Run("middle", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal")
		j := openJournal(t, path, client.FileJournalConfig{})
		j.Record(ctx, entry("a", `{"a":1}`))
		j.Close()
		data, _ := os.ReadFile(path)
		os.WriteFile(path, append([]byte("{not json}\n"), data...), 0o600)
		if _, err := client.OpenFileJournal(path, client.FileJournalConfig{}); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("a corrupt line before the last: err = %v, want a refusal naming line 1", err)
		}
	})
}

// TestFileJournalCompaction: done entries are forgotten after Retention
// and the file is rewritten when done marks dominate, so it stays bounded
// however many deliveries go through; pending entries survive every
// compaction and a reopen.
func TestFileJournalCompaction(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	path := filepath.Join(t.TempDir(), "journal")
	cfg := withClock(clock, client.WithCompactAt(client.FileJournalConfig{Retention: time.Hour}, 32))
	j := openJournal(t, path, cfg)
	const n = 1000
	maxLines := 0
	for i := range n {
		e, err := j.Record(ctx, entry(fmt.Sprint("k", i), fmt.Sprintf(`{"i":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		if i%100 != 0 { // one in a hundred stays pending
			if err := j.Done(ctx, e, client.OutcomeDelivered); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(4 * time.Minute)
		maxLines = max(maxLines, j.Lines())
	}
	// Remembered: 10 pending and the 15 or so done in the last hour.
	if maxLines > 2*(32+10+16)+2 {
		t.Errorf("the file grew to %d lines for %d deliveries; want it bounded", maxLines, n)
	}
	data, _ := os.ReadFile(path)
	if lines := bytes.Count(data, []byte("\n")); lines != j.Lines() {
		t.Errorf("file has %d lines, journal counts %d", lines, j.Lines())
	}
	// A done entry still remembered keeps its bytes; a forgotten one does not.
	recent, _ := j.Record(ctx, entry(fmt.Sprint("k", n-2), `{"other":1}`))
	if string(recent.Body) != fmt.Sprintf(`{"i":%d}`, n-2) || recent.Outcome != client.OutcomeDelivered {
		t.Errorf("a recently done entry = %s (%q), want its first bytes", recent.Body, recent.Outcome)
	}
	old, _ := j.Record(ctx, entry("k1", `{"other":1}`))
	if string(old.Body) != `{"other":1}` {
		t.Errorf("an entry done %v ago is still remembered: %s", n*4*time.Minute, old.Body)
	}
	j.Close()
	j = openJournal(t, path, cfg)
	p, _ := j.Pending(ctx)
	if len(p) != n/100+1 { // and k1, recorded anew
		t.Fatalf("%d pending after reopen, want %d", len(p), n/100+1)
	}
	for i, e := range p[:n/100] {
		if e.Key != fmt.Sprint("k", i*100) {
			t.Fatalf("pending[%d] = %s, want k%d (in record order)", i, e.Key, i*100)
		}
	}
}

// TestFileJournalConcurrent records and marks done from many goroutines
// at once (run with -race): every record is durable and distinct, and the
// group commit syncs fewer times than there are records.
func TestFileJournalConcurrent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path, client.WithCompactAt(client.FileJournalConfig{}, 100))
	var wg sync.WaitGroup
	errs := make(chan error, 8*50)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Sprintf("g%d-%d", g, i)
				e, err := j.Record(ctx, entry(key, fmt.Sprintf(`{"k":%q}`, key)))
				if err == nil && string(e.Body) != fmt.Sprintf(`{"k":%q}`, key) {
					err = fmt.Errorf("%s: body %s", key, e.Body)
				}
				if err == nil && i%2 == 0 {
					err = j.Done(ctx, e, client.OutcomeDelivered)
				}
				if err != nil {
					errs <- err
				}
				j.Record(ctx, entry("shared", fmt.Sprintf(`{"g":%d}`, g)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	j.Close()
	if _, err := j.Record(ctx, entry("late", "{}")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Record after Close: %v", err)
	}
	j = openJournal(t, path, client.FileJournalConfig{})
	p, _ := j.Pending(ctx)
	if len(p) != 8*25+1 {
		t.Errorf("%d pending after reopen, want %d", len(p), 8*25+1)
	}
}

// TestFileJournalNegativeRetention: with a negative Retention a done entry
// is forgotten at the next compaction, and only pending ones are kept.
func TestFileJournalNegativeRetention(t *testing.T) {
	ctx := context.Background()
	j := openJournal(t, filepath.Join(t.TempDir(), "journal"), client.WithCompactAt(client.FileJournalConfig{Retention: -1}, 8))
	pending, _ := j.Record(ctx, entry("pending", "{}"))
	for i := range 20 {
		e, _ := j.Record(ctx, entry(fmt.Sprint("k", i), "{}"))
		if err := j.Done(ctx, e, client.OutcomeDelivered); err != nil {
			t.Fatal(err)
		}
	}
	if n := j.Lines(); n > 16 {
		t.Errorf("%d lines after 20 done deliveries, want at most 16", n)
	}
	es := j.Entries()
	if len(es) > 8 || es[0].Key != pending.Key {
		t.Errorf("remembered %d entries, first %q; want the pending one and few done", len(es), es[0].Key)
	}
}

// TestFileJournalPreallocatedTail: a crash leaves the preallocated part of
// the file as zeros after the last line, and in the part not yet synced a
// torn line can be followed by a hole of zeros and by lines written after
// it. Opening the journal ends it at the line holding its first zero byte
// (no line the journal writes holds one: nothing after it had been
// synced), keeps every entry before, and appends the next record there.
func TestFileJournalPreallocatedTail(t *testing.T) {
	ctx := context.Background()
	const torn = `{"op":"record","method":"POST","url":"http://receiver.test/features","key":"torn","bo`
	zeros := func(n int) string { return strings.Repeat("\x00", n) }
	for name, tail := range map[string]string{
		"zeros":           zeros(1 << 20),
		"torn then zeros": torn + zeros(1<<20),
		"torn, a hole, lines written after it": torn + zeros(4096) +
			`dy":{}}` + "\n" + `{"op":"done","method":"POST","url":"http://receiver.test/features","key":"a","time":"2026-03-01T12:00:00Z","outcome":"delivered"}` + "\n" + zeros(8192),
		"a hole, then a line": zeros(4096) + `{"op":"done","method":"POST","url":"http://receiver.test/features","key":"a","time":"2026-03-01T12:00:00Z","outcome":"delivered"}` + "\n" + zeros(100),
	} {
		t.Run(name, func(t *testing.T) {
			path, good := journalWithTail(t, tail)
			j := openJournal(t, path, client.FileJournalConfig{})
			if p, _ := j.Pending(ctx); len(p) != 1 || p[0].Key != "a" {
				t.Fatalf("pending = %v, want a", p)
			}
			if _, err := j.Record(ctx, entry("b", `{"b":1}`)); err != nil {
				t.Fatal(err)
			}
			j.Close()
			data, _ := os.ReadFile(path)
			if !bytes.HasPrefix(data, good) || bytes.IndexByte(data, 0) >= 0 || bytes.Count(data, []byte("\n")) != 2 {
				t.Errorf("file after a record and Close = %q; want the first line, then b's, and no zeros", data)
			}
			j = openJournal(t, path, client.FileJournalConfig{})
			p, _ := j.Pending(ctx)
			if len(p) != 2 || p[0].Key != "a" || p[1].Key != "b" {
				t.Errorf("pending = %v, want a and b", p)
			}
		})
	}
}

// TestFileJournalCrashWithPreallocation: while open, the journal may hold
// room reserved past its last line; a crash (the file as it is, never
// closed) loses no synced record, and the journal reopened from it
// appends after the last line.
func TestFileJournalCrashWithPreallocation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal")
	j := openJournal(t, path, client.FileJournalConfig{})
	for i := range 20 {
		e, err := j.Record(ctx, entry(fmt.Sprint("k", i), fmt.Sprintf(`{"i":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			j.Done(ctx, e, client.OutcomeDelivered)
		}
	}
	crashed, _ := os.ReadFile(path) // a crash now: the file as the disk holds it
	if bytes.IndexByte(crashed, 0) < 0 {
		t.Log("no room reserved past the last line: the file system cannot preallocate")
	}
	copyPath := filepath.Join(dir, "crashed")
	if err := os.WriteFile(copyPath, crashed, 0o600); err != nil {
		t.Fatal(err)
	}
	j2 := openJournal(t, copyPath, client.FileJournalConfig{})
	p, _ := j2.Pending(ctx)
	if len(p) != 10 {
		t.Fatalf("%d pending after the crash, want 10", len(p))
	}
	if _, err := j2.Record(ctx, entry("after", `{}`)); err != nil {
		t.Fatal(err)
	}
	j2.Close()
	j2 = openJournal(t, copyPath, client.FileJournalConfig{})
	if p, _ := j2.Pending(ctx); len(p) != 11 || p[10].Key != "after" {
		t.Errorf("%d pending after a record and a reopen, want 11 ending with after", len(p))
	}
	// A clean Close gives the reserved room back: the file is its lines.
	j.Close()
	data, _ := os.ReadFile(path)
	if bytes.IndexByte(data, 0) >= 0 || !bytes.HasSuffix(data, []byte("\n")) {
		t.Errorf("file after Close ends %q; want its last line, no zeros", data[max(0, len(data)-40):])
	}
}

// TestFileJournalZeroBytesInEntries: zero bytes in an entry's key, header
// or body never reach the file as zero bytes (opening the journal ends it
// at the first one), so the entry survives a reopen with its bytes.
func TestFileJournalZeroBytesInEntries(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path, client.FileJournalConfig{})
	es := []client.JournalEntry{entry("k\x00ey", "\x00"), entry("json", `{"s":"\u0000"}`), entry("header", "{}")}
	es[2].Header.Set("X-Zero", "a\x00b")
	for _, e := range es {
		if _, err := j.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	j.Record(ctx, entry("last", "{}"))
	j.Close()
	if data, _ := os.ReadFile(path); bytes.IndexByte(data, 0) >= 0 {
		t.Fatalf("the file holds a zero byte: %q", data)
	}
	j = openJournal(t, path, client.FileJournalConfig{})
	p, _ := j.Pending(ctx)
	if len(p) != 4 || p[0].Key != "k\x00ey" || string(p[0].Body) != "\x00" || string(p[1].Body) != `{"s":"\u0000"}` ||
		p[2].Header.Get("X-Zero") != "a\x00b" || p[3].Key != "last" {
		t.Errorf("pending after reopen = %q", p)
	}
}

// journalWithTail writes a journal holding entry "a" and closes it, then
// appends tail to its file, as a crash might leave it. It returns the
// file's path and its contents before tail.
func journalWithTail(t *testing.T, tail string) (path string, good []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, path, client.FileJournalConfig{})
	j.Record(context.Background(), entry("a", `{"a":1}`))
	j.Close()
	good, _ = os.ReadFile(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(tail)
	f.Close()
	return path, good
}
