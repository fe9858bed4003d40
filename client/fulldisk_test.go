package client_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// fullDisk is a filesystem with room for a number of bytes: a write that
// does not fit writes what fits and fails with ENOSPC, as write(2) does.
type fullDisk struct {
	mu   sync.Mutex
	room int64 // < 0: unlimited
}

func (d *fullDisk) setRoom(n int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.room = n
}

func (d *fullDisk) wrap(f *os.File) client.JournalFile { return &fullFile{File: f, disk: d} }

type fullFile struct {
	*os.File
	disk *fullDisk
}

func (f *fullFile) Write(p []byte) (int, error) {
	f.disk.mu.Lock()
	defer f.disk.mu.Unlock()
	if f.disk.room < 0 || int64(len(p)) <= f.disk.room {
		if f.disk.room >= 0 {
			f.disk.room -= int64(len(p))
		}
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:f.disk.room])
	f.disk.room = 0
	return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

// TestOutboxFullDisk: with its journal on a full disk, an outbox sends no
// event it cannot record, and hands each such event to the dead-letter
// sink with its key and exact bytes (reason "not-journaled", 0 attempts),
// so that nothing is lost: the dead letter is re-driven once there is room.
// An event recorded before the disk filled is still sent with the bytes
// the journal holds (a replay, not a second execution). Without a sink the
// event is not sent and the error says why.
func TestOutboxFullDisk(t *testing.T) {
	ctx := context.Background()
	rv := newReplayer()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "journal")
	disk := &fullDisk{room: -1}
	j, err := client.OpenFileJournalWrapped(path, client.FileJournalConfig{}, disk.wrap)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	sink := &memSink{}
	s, err := client.New(nil, withClock(newFakeClock(), client.Config{MaxAttempts: 2, Rand: newSource(1), DeadLetter: sink}))
	if err != nil {
		t.Fatal(err)
	}
	ob := client.NewOutbox(s, j)
	first := client.Delivery{URL: srv.URL + "/features", Key: "first", Body: []byte(`{"stamp":"first run"}`)}
	if _, err := ob.Deliver(ctx, first); err != nil {
		t.Fatal(err)
	}

	disk.setRoom(40) // the next record does not fit
	d := client.Delivery{URL: srv.URL + "/features", Key: "full", Body: []byte(`{"n":2,"stamp":"now"}`)}
	res, err := ob.Deliver(ctx, d)
	dls := sink.All()
	if len(dls) != 1 {
		t.Fatalf("%d dead letters for an event the journal could not record (err %v); want 1", len(dls), err)
	}
	if dl := dls[0]; dl.Key != "full" || string(dl.Body) != string(d.Body) || dl.Reason != "not-journaled" || dl.Attempts != 0 {
		t.Errorf("dead letter = key %q payload %s reason %q attempts %d; want the event, reason not-journaled, 0 attempts",
			dl.Key, dl.Body, dl.Reason, dl.Attempts)
	}
	var derr *client.DeliveryError
	if !errors.Is(err, client.ErrNotJournaled) || !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &derr) || res.Attempts != 0 {
		t.Errorf("err = %v; want ErrNotJournaled wrapping ENOSPC, a *DeliveryError with 0 attempts", err)
	}
	if _, ok := rv.sums["full"]; ok {
		t.Error("an event the journal could not record was sent")
	}

	// A re-run stamps "first" anew: the journal's bytes are sent, replayed.
	rerun := first
	rerun.Body = []byte(`{"stamp":"second run"}`)
	if res, err := ob.Deliver(ctx, rerun); err != nil || !res.Replayed {
		t.Errorf("a recorded event on a full disk: %+v, %v; want a replay of the journal's bytes", res, err)
	}

	// Without a sink, nothing is sent and the error says why.
	bare, _ := client.New(nil, withClock(newFakeClock(), client.Config{MaxAttempts: 2}))
	_, err = client.NewOutbox(bare, j).Deliver(ctx, client.Delivery{URL: srv.URL + "/features", Key: "bare", Body: []byte(`{}`)})
	if !errors.Is(err, client.ErrNotJournaled) {
		t.Errorf("without a sink: %v; want ErrNotJournaled", err)
	}
	if _, ok := rv.sums["bare"]; ok {
		t.Error("an event the journal could not record was sent (no sink)")
	}

	// Room again: the torn line is dropped on open, nothing is pending,
	// and the dead letter is delivered once.
	j.Close()
	disk.setRoom(-1)
	j2 := openJournal(t, path, client.FileJournalConfig{})
	if p, _ := j2.Pending(ctx); len(p) != 0 {
		t.Errorf("%d entries pending after the full disk, want 0", len(p))
	}
	s2, _ := client.New(nil, withClock(newFakeClock(), client.Config{}))
	if _, err := client.NewOutbox(s2, j2).Redrive(ctx, dls[0]); err != nil {
		t.Fatalf("re-drive: %v", err)
	}
	if rv.sums["full"] != sha256.Sum256(d.Body) || rv.executed["full"] != 1 || rv.executed["first"] != 1 || rv.mismatch != 0 {
		t.Errorf("executed full %d, first %d, %d key reuses; want 1, 1, 0", rv.executed["full"], rv.executed["first"], rv.mismatch)
	}
}
