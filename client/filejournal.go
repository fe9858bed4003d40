package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/geoidem/geoidem/internal/senderclock"
)

// Defaults of a [FileJournalConfig].
const (
	defaultJournalRetention = 24 * time.Hour
	defaultJournalCompact   = 1024
)

// FileJournalConfig configures a [FileJournal]. Zero fields mean the
// documented defaults.
type FileJournalConfig struct {
	// Retention is how long an entry is remembered after it was marked
	// done (default 24 hours, the geoidem middleware's default retention;
	// negative: forgotten at the next compaction). While it is remembered,
	// a re-run that records the same identity gets the bytes first
	// recorded, and its re-send is a replay. Keep it no longer than the
	// receiver's retention.
	Retention time.Duration

	// compactAt is the number of lines below which the file is never
	// compacted (0: 1024); only the tests set it.
	compactAt int

	// clock supplies the times of entries and of retention (nil:
	// senderclock.System); only senderclock.Set sets it, for the
	// repository's tests.
	clock senderclock.Clock
}

// FileJournal is the embedded [Journal]: a file of JSON lines, one per
// recorded entry and one per done mark, appended and, for records, synced
// before [FileJournal.Record] returns: one write and one fdatasync (fsync
// where the platform has no fdatasync) per record, or per batch of
// concurrent records.
//
// Concurrent Records share their syncs (group commit): while one goroutine
// syncs the file, the others append their lines and wait, and the next sync
// covers them all, so n concurrent deliveries cost far fewer than n syncs.
//
// An [Outbox] over a FileJournal does not wait for the sync before a
// delivery's first attempt: it waits for the record's line to be written
// to the file (its batch's one write), sends the first attempt while the
// sync runs, and waits for the sync before anything else (see
// [Outbox.Deliver]). A serial delivery then costs about the longer of the
// sync and the attempt, not their sum.
//
// # Crashes
//
// A crash (or power loss) can leave the last line torn. Opening the journal
// drops a final line that is incomplete or does not parse, and truncates
// the file there: that line's Record had not returned, so nothing was sent
// with it. An unparseable line anywhere else is corruption, and
// [OpenFileJournal] refuses the file.
//
// The file grows 1 MiB at a time, preallocated where the platform can
// (fallocate on Linux), so that a record's sync does not also wait for the
// file system to allocate blocks; [FileJournal.Close] gives the room not
// used back. After a crash that room reads as zeros, and the part written
// since the last sync may be on disk only in pieces, around holes of
// zeros. No line the journal writes holds a zero byte, so opening it ends
// the journal at the first line that does, and truncates the file there:
// nothing from there on had been synced, so no Record that returned is
// dropped.
//
// # Growth
//
// The journal keeps its entries in memory too: the pending ones and those
// done less than Retention ago. When the file holds at least 1024 lines
// and twice as many as after its last compaction (done marks and
// forgotten entries dominating), it is rewritten with one line per
// remembered entry, synced, and renamed over the old one. So the file stays
// within a small multiple of what it must remember.
type FileJournal struct {
	path      string
	retention time.Duration
	compactAt int
	clock     senderclock.Clock

	// wrap, when set (by tests), stands between the journal and its
	// files' writes and syncs: a full disk is simulated there.
	wrap func(*os.File) journalFile

	mu       sync.Mutex
	cond     *sync.Cond
	f        journalFile
	entries  map[identity]*journalSlot
	order    []*journalSlot // in the order recorded
	lines    int            // lines in the file
	baseline int            // lines right after the last compaction (or open)
	appended uint64         // appends so far
	written  uint64         // appends a leader wrote to the file (a lower bound)
	synced   uint64         // appends known to be on stable storage
	syncing  bool
	syncs    uint64 // group commits so far (for the benchmarks)
	end      int64  // where the next write goes: the bytes written so far
	reserved int64  // the file's size, room preallocated past end included
	noRoom   bool   // no preallocation: plain appends from then on
	// roomUnknown: a preallocation failed, and may have reserved part of
	// its room (Close truncates the file at end all the same).
	roomUnknown bool
	buf         []byte // lines appended but not yet written (while a sync runs)
	spare       []byte // the previous batch, reused
	err         error  // sticky: a failed write or sync leaves the file unknown
	closed      bool
}

// journalFile is what the journal does with its open file once loaded.
type journalFile interface {
	Write([]byte) (int, error)
	Sync() error
	Close() error
}

// file returns f as the journal writes it.
func (j *FileJournal) file(f *os.File) journalFile {
	if j.wrap != nil {
		return j.wrap(f)
	}
	return f
}

// journalSlot is one remembered entry.
type journalSlot struct {
	e   JournalEntry
	seq uint64 // the append that recorded it
}

// OpenFileJournal opens the journal at path, creating it (mode 0600) if
// needed, reads what it remembers, and drops a torn last line.
func OpenFileJournal(path string, cfg FileJournalConfig) (*FileJournal, error) {
	return openFileJournal(path, cfg, nil)
}

func openFileJournal(path string, cfg FileJournalConfig, wrap func(*os.File) journalFile) (*FileJournal, error) {
	j := &FileJournal{
		wrap:      wrap,
		path:      path,
		retention: orDefault(cfg.Retention, defaultJournalRetention),
		compactAt: orDefault(cfg.compactAt, defaultJournalCompact),
		clock:     cfg.clock,
		entries:   make(map[identity]*journalSlot),
	}
	if j.clock == nil {
		j.clock = senderclock.System{}
	}
	j.cond = sync.NewCond(&j.mu)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("client: journal: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		syncDir(path) // a new file's name must survive a crash too
	}
	end, err := j.load(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("client: journal %s: %w", path, err)
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("client: journal: %w", err)
	}
	j.f = j.file(f)
	j.end, j.reserved = end, end
	j.baseline = j.lines
	return j, nil
}

// Record implements [Journal]. It ignores ctx: a local write is not worth
// abandoning half way, and a delivery canceled before its first attempt is
// still recorded and dead-lettered.
//
// A failed write or sync (a full disk) leaves the file's end unknown: every
// later Record of a new identity fails with that error, while an identity
// already on stable storage is still returned, so that it is sent with the
// bytes first recorded.
func (j *FileJournal) Record(_ context.Context, e JournalEntry) (JournalEntry, error) {
	rec, _, _, err := j.record(e, true)
	return rec, err
}

// recordWritten is Record for the overlap (see journalSync): it is Record, except that it
// returns once the entry's line is written to the file, its sync (shared
// with the concurrent records of its batch) still running; awaitSync
// waits for that sync.
//
// When it handed its batch's sync to a goroutine, it yields its processor
// (runtime.Gosched) before it returns, so that the sync, the longer of
// the two on a disk that syncs slower than a loopback round trip, starts
// at once rather than after the attempt has blocked: with the caller
// runnable, the new goroutine would wait for a processor of its own. With
// no other processor free (GOMAXPROCS=1, or all busy), the attempt may
// then wait for the sync to end: at worst the order of Record.
func (j *FileJournal) recordWritten(_ context.Context, e JournalEntry) (JournalEntry, uint64, error) {
	rec, seq, handed, err := j.record(e, false)
	if handed {
		runtime.Gosched()
	}
	return rec, seq, err
}

// awaitSync is the overlap's wait (see journalSync): it returns once append seq is on
// stable storage, or the error that keeps it from getting there.
func (j *FileJournal) awaitSync(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err := j.commit(seq, true)
	return err
}

// record is Record when durable, and recordWritten when not: it also
// returns the append whose sync makes the entry durable, and whether it
// handed that sync to a goroutine (see commit).
func (j *FileJournal) record(e JournalEntry, durable bool) (_ JournalEntry, _ uint64, handed bool, err error) {
	e = journalEntry(e.Delivery)
	e.Outcome, e.Ended = "", time.Time{}
	e.Recorded = j.clock.Now().Round(0).UTC()
	line, err := recordLine(e)
	if err != nil {
		return JournalEntry{}, 0, false, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	id := e.identity()
	if s, ok := j.entries[id]; ok && !j.closed && s.seq <= j.synced {
		// Already on stable storage: a failed write since (a full disk)
		// does not change which bytes this identity is sent with.
		return copyEntry(s.e), s.seq, false, nil
	}
	if err := j.usable(); err != nil {
		return JournalEntry{}, 0, false, err
	}
	s, ok := j.entries[id]
	if !ok {
		if err := j.append(line, false); err != nil {
			return JournalEntry{}, 0, false, err
		}
		s = &journalSlot{e: e, seq: j.appended}
		j.entries[id] = s
		j.order = append(j.order, s)
	}
	// Another goroutine's record of the same identity may not be synced
	// (or written) yet: wait for it as for one's own.
	if handed, err = j.commit(s.seq, durable); err != nil {
		return JournalEntry{}, 0, handed, err
	}
	return copyEntry(s.e), s.seq, handed, nil
}

// Done implements [Journal]. The mark is written but not synced; it may
// trigger a compaction, whose error Done returns (the mark itself was
// written).
func (j *FileJournal) Done(_ context.Context, e JournalEntry, outcome string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return err
	}
	s, ok := j.entries[e.identity()]
	if !ok {
		return nil
	}
	now := j.clock.Now().Round(0).UTC()
	line, err := marshalLine(journalLine{Op: "done", Method: s.e.Method, URL: s.e.URL, Key: s.e.Key, Time: now, Outcome: outcome})
	if err != nil {
		return err
	}
	if err := j.append(line, true); err != nil {
		return err
	}
	s.e.Outcome, s.e.Ended = outcome, now
	if j.lines >= j.compactAt && j.lines >= 2*j.baseline {
		return j.compact()
	}
	return nil
}

// Pending implements [Journal].
func (j *FileJournal) Pending(context.Context) ([]JournalEntry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, errJournalClosed
	}
	var out []JournalEntry
	for _, s := range j.order {
		if s.e.Outcome == "" {
			out = append(out, copyEntry(s.e))
		}
	}
	return out, nil
}

// Entries returns every entry the journal remembers, pending or done, in
// the order recorded.
func (j *FileJournal) Entries() []JournalEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]JournalEntry, 0, len(j.order))
	for _, s := range j.order {
		out = append(out, copyEntry(s.e))
	}
	return out
}

// lineCount returns how many lines the file holds: a measure of its growth.
func (j *FileJournal) lineCount() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.lines
}

// Close writes and syncs what is buffered, gives back the room reserved
// past the last line, and closes the file; later calls fail with an
// error wrapping [os.ErrClosed]. It waits for a sync in progress, and is a
// no-op the second time.
func (j *FileJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.syncing {
		j.cond.Wait()
	}
	if j.closed {
		return nil
	}
	j.closed = true
	j.cond.Broadcast()
	var err error
	if j.err == nil && len(j.buf) > 0 {
		if err = j.writeBuf(); err == nil {
			err = syncData(j.f)
		}
		j.buf = nil
	}
	if err == nil && j.err == nil && (j.reserved > j.end || j.roomUnknown) {
		// Give the room back: the file is its lines again.
		if t, ok := j.f.(interface{ Truncate(int64) error }); ok {
			if err = t.Truncate(j.end); err == nil {
				err = syncData(j.f)
			}
		}
	}
	return errors.Join(err, j.f.Close())
}

func (j *FileJournal) usable() error {
	if j.closed {
		return errJournalClosed
	}
	return j.err
}

// copyEntry returns e with its own body and header.
func copyEntry(e JournalEntry) JournalEntry {
	e.Body = append([]byte{}, e.Body...)
	e.Header = e.Header.Clone()
	return e
}
