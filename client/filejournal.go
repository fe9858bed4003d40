package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Defaults of a [FileJournalConfig].
const (
	DefaultJournalRetention = 24 * time.Hour
	DefaultJournalCompact   = 1024
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

	// CompactAt is the number of lines below which the file is never
	// compacted (default 1024).
	CompactAt int

	// Clock supplies the times of entries and of retention (default
	// [SystemClock]).
	Clock Clock
}

// FileJournal is the embedded [Journal]: a file of JSON lines, one per
// recorded entry and one per done mark, appended and, for records, synced
// before [FileJournal.Record] returns.
//
// Concurrent Records share their syncs (group commit): while one goroutine
// syncs the file, the others append their lines and wait, and the next sync
// covers them all, so n concurrent deliveries cost far fewer than n syncs.
//
// # Crashes
//
// A crash (or power loss) can leave the last line torn. Opening the journal
// drops a final line that is incomplete or does not parse, and truncates
// the file there: that line's Record had not returned, so nothing was sent
// with it. An unparseable line anywhere else is corruption, and
// [OpenFileJournal] refuses the file.
//
// # Growth
//
// The journal keeps its entries in memory too: the pending ones and those
// done less than Retention ago. When the file holds at least CompactAt
// lines and twice as many as after its last compaction (done marks and
// forgotten entries dominating), it is rewritten with one line per
// remembered entry, synced, and renamed over the old one. So the file stays
// within a small multiple of what it must remember.
type FileJournal struct {
	path      string
	retention time.Duration
	compactAt int
	clock     Clock

	mu       sync.Mutex
	cond     *sync.Cond
	f        *os.File
	entries  map[identity]*journalSlot
	order    []*journalSlot // in the order recorded
	lines    int            // lines in the file
	baseline int            // lines right after the last compaction (or open)
	appended uint64         // appends so far
	synced   uint64         // appends known to be on stable storage
	syncing  bool
	buf      []byte // lines appended but not yet written (while a sync runs)
	spare    []byte // the previous batch, reused
	err      error  // sticky: a failed write or sync leaves the file unknown
	closed   bool
}

// journalSlot is one remembered entry.
type journalSlot struct {
	e   JournalEntry
	seq uint64 // the append that recorded it
}

// journalLine is one line of the file.
type journalLine struct {
	Op          string          `json:"op"` // "record" or "done"
	Method      string          `json:"method"`
	URL         string          `json:"url"`
	Key         string          `json:"key"`
	ContentType string          `json:"content_type,omitempty"`
	Header      http.Header     `json:"header,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	BodyBase64  []byte          `json:"body_base64,omitempty"`
	Empty       bool            `json:"empty,omitempty"` // a record whose body is empty
	Time        time.Time       `json:"time"`            // recorded, or done
	Outcome     string          `json:"outcome,omitempty"`
	Ended       time.Time       `json:"ended,omitzero"` // a compacted record of a done entry
}

// OpenFileJournal opens the journal at path, creating it (mode 0600) if
// needed, reads what it remembers, and drops a torn last line.
func OpenFileJournal(path string, cfg FileJournalConfig) (*FileJournal, error) {
	j := &FileJournal{
		path:      path,
		retention: orDefault(cfg.Retention, DefaultJournalRetention),
		compactAt: orDefault(cfg.CompactAt, DefaultJournalCompact),
		clock:     cfg.Clock,
		entries:   make(map[identity]*journalSlot),
	}
	if j.clock == nil {
		j.clock = SystemClock{}
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
	if err := j.load(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("client: journal %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, fmt.Errorf("client: journal: %w", err)
	}
	j.f = f
	j.baseline = j.lines
	return j, nil
}

// load reads every line of f, truncating a torn last one.
func (j *FileJournal) load(f *os.File) error {
	r := bufio.NewReaderSize(f, 64<<10)
	var off int64
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return err
		}
		if len(line) == 0 {
			return nil
		}
		complete := line[len(line)-1] == '\n'
		perr := errors.New("incomplete line")
		if complete {
			perr = j.apply(line)
		}
		if perr != nil {
			if _, err := r.Peek(1); err != io.EOF { // not the last line
				return fmt.Errorf("line %d: %w", n, perr)
			}
			// A torn last line: its Record never returned.
			if err := f.Truncate(off); err != nil {
				return err
			}
			return f.Sync()
		}
		off += int64(len(line))
		j.lines++
	}
}

// apply replays one line onto the entries.
func (j *FileJournal) apply(line []byte) error {
	var l journalLine
	if err := json.Unmarshal(line, &l); err != nil {
		return err
	}
	e := JournalEntry{Method: l.Method, URL: l.URL, Key: l.Key}
	id := e.identity()
	switch l.Op {
	case "record":
		if _, ok := j.entries[id]; ok {
			return nil // the first record wins
		}
		e.ContentType, e.Header, e.Recorded = l.ContentType, l.Header, l.Time
		e.Outcome, e.Ended = l.Outcome, l.Ended
		switch {
		case l.Body != nil:
			e.Body = []byte(l.Body)
		case l.BodyBase64 != nil:
			e.Body = l.BodyBase64
		case l.Empty:
			e.Body = []byte{}
		default:
			return errors.New("a record without a body")
		}
		s := &journalSlot{e: e}
		j.entries[id] = s
		j.order = append(j.order, s)
	case "done":
		if s, ok := j.entries[id]; ok {
			s.e.Outcome, s.e.Ended = l.Outcome, l.Time
		}
	default:
		return fmt.Errorf("unknown op %q", l.Op)
	}
	return nil
}

// recordLine is the line that records e (with its outcome, if it is done).
func recordLine(e JournalEntry) ([]byte, error) {
	l := journalLine{
		Op: "record", Method: e.Method, URL: e.URL, Key: e.Key, ContentType: e.ContentType,
		Header: e.Header, Time: e.Recorded, Outcome: e.Outcome, Ended: e.Ended,
	}
	switch {
	case len(e.Body) == 0:
		l.Empty = true
	case embeddable(e.Body):
		l.Body = e.Body
	default:
		l.BodyBase64 = e.Body
	}
	return marshalLine(l)
}

func marshalLine(l journalLine) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // ends the line with '\n'
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		return nil, fmt.Errorf("client: journal: %w", err)
	}
	return buf.Bytes(), nil
}

// Record implements [Journal]. It ignores ctx: a local write is not worth
// abandoning half way, and a delivery canceled before its first attempt is
// still recorded and dead-lettered.
func (j *FileJournal) Record(_ context.Context, e JournalEntry) (JournalEntry, error) {
	e = journalEntry(e.Delivery())
	e.Outcome, e.Ended = "", time.Time{}
	e.Recorded = j.clock.Now().Round(0).UTC()
	line, err := recordLine(e)
	if err != nil {
		return JournalEntry{}, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return JournalEntry{}, err
	}
	id := e.identity()
	s, ok := j.entries[id]
	if !ok {
		if err := j.append(line); err != nil {
			return JournalEntry{}, err
		}
		s = &journalSlot{e: e, seq: j.appended}
		j.entries[id] = s
		j.order = append(j.order, s)
	}
	// Another goroutine's record of the same identity may not be synced
	// yet: wait for it as for one's own.
	if err := j.waitSynced(s.seq); err != nil {
		return JournalEntry{}, err
	}
	return copyEntry(s.e), nil
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
	if err := j.append(line); err != nil {
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
		return nil, ErrJournalClosed
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

// Lines returns how many lines the file holds: a measure of its growth.
func (j *FileJournal) Lines() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.lines
}

// Close writes and syncs what is buffered and closes the file; later calls
// fail with [ErrJournalClosed]. It waits for a sync in progress, and is a
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
		if _, err = j.f.Write(j.buf); err == nil {
			err = j.f.Sync()
		}
		j.buf = nil
	}
	return errors.Join(err, j.f.Close())
}

func (j *FileJournal) usable() error {
	if j.closed {
		return ErrJournalClosed
	}
	return j.err
}

// append adds one line to the buffer, and writes the buffer at once
// unless a sync is in progress: then the next sync writes it. (Writing
// while the file syncs can block on the page under writeback, and with
// j.mu held that would stall every delivery.) j.mu is held.
func (j *FileJournal) append(line []byte) error {
	j.buf = append(j.buf, line...)
	j.lines++
	j.appended++
	if j.syncing {
		return nil
	}
	return j.writeBuf()
}

// writeBuf writes the buffered lines with one Write. j.mu is held.
func (j *FileJournal) writeBuf() error {
	if len(j.buf) == 0 {
		return nil
	}
	if _, err := j.f.Write(j.buf); err != nil {
		j.err = fmt.Errorf("client: journal write: %w", err)
		return j.err
	}
	j.buf = j.buf[:0]
	return nil
}

// waitSynced returns once append seq is on stable storage. Unless another
// goroutine is syncing already (then it waits for the next sync, which
// covers seq), it becomes the leader: it takes every line buffered so far,
// writes them and syncs the file with j.mu released, so that the lines
// other goroutines append meanwhile form the next batch. j.mu is held.
func (j *FileJournal) waitSynced(seq uint64) error {
	for j.synced < seq {
		if err := j.usable(); err != nil {
			return err
		}
		if j.syncing {
			j.cond.Wait()
			continue
		}
		j.syncing = true
		batch, target, f := j.buf, j.appended, j.f
		j.buf = j.spare[:0]
		j.mu.Unlock()
		_, err := f.Write(batch)
		if err == nil {
			err = f.Sync()
		}
		j.mu.Lock()
		j.spare = batch
		j.syncing = false
		if err != nil {
			j.err = fmt.Errorf("client: journal sync: %w", err)
		} else {
			j.synced = max(j.synced, target)
		}
		j.cond.Broadcast()
	}
	return nil
}

// compact rewrites the file with one line per remembered entry. j.mu is
// held. On failure the old file stays in use, and the next attempt waits
// for the file to double again.
func (j *FileJournal) compact() error {
	for j.syncing {
		j.cond.Wait()
	}
	if err := j.usable(); err != nil {
		return err
	}
	if j.lines < j.compactAt || j.lines < 2*j.baseline {
		return nil // another goroutine compacted while this one waited
	}
	forget := j.clock.Now().Add(-j.retention)
	var (
		buf  bytes.Buffer
		kept []*journalSlot
	)
	for _, s := range j.order {
		if s.e.Outcome != "" && (j.retention < 0 || s.e.Ended.Before(forget)) {
			continue
		}
		line, err := recordLine(s.e)
		if err != nil {
			return err
		}
		buf.Write(line)
		kept = append(kept, s)
	}
	j.baseline = j.lines // if this fails, wait for the file to double again
	tmp := j.path + ".compact"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("client: journal compaction: %w", err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("client: journal compaction: %w", err)
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fail(err)
	}
	syncDir(j.path) // make the rename durable
	old := j.f
	j.f = f
	j.buf = j.buf[:0] // their effect is in the compacted file
	_ = old.Close()
	j.order = kept
	j.entries = make(map[identity]*journalSlot, len(kept))
	for _, s := range kept {
		j.entries[s.e.identity()] = s
	}
	j.lines, j.baseline = len(kept), len(kept)
	j.synced = j.appended // everything remembered is in the synced file
	return nil
}

// syncDir syncs the directory holding path, where the platform allows it,
// so that a file created or renamed there survives a crash.
func syncDir(path string) {
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// copyEntry returns e with its own body and header.
func copyEntry(e JournalEntry) JournalEntry {
	e.Body = append([]byte{}, e.Body...)
	e.Header = e.Header.Clone()
	return e
}
