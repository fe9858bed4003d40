package client

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// compactChunk is the size of a compaction's write buffer: the most of
// the compacted file it holds in memory at once, but for a single line
// longer than that, which is written as it is.
const compactChunk = 64 << 10

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
	// The kept entries' lines go out as they are encoded, through a
	// buffer of compactChunk bytes: the compacted file is never whole in
	// memory.
	wf := j.file(f)
	w := bufio.NewWriterSize(wf, compactChunk)
	var (
		size int64
		kept []*journalSlot
	)
	for _, s := range j.order {
		if s.e.Outcome != "" && (j.retention < 0 || s.e.Ended.Before(forget)) {
			continue
		}
		line, err := recordLine(s.e)
		if err != nil {
			return fail(err)
		}
		if _, err := w.Write(line); err != nil {
			return fail(err)
		}
		size += int64(len(line))
		kept = append(kept, s)
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := syncData(wf); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fail(err)
	}
	syncDir(j.path) // make the rename durable
	old := j.f
	j.f = wf
	j.end, j.reserved = size, size
	j.buf = j.buf[:0] // their effect is in the compacted file
	_ = old.Close()
	j.order = kept
	j.entries = make(map[identity]*journalSlot, len(kept))
	for _, s := range kept {
		j.entries[s.e.identity()] = s
	}
	j.lines, j.baseline = len(kept), len(kept)
	j.written, j.synced = j.appended, j.appended // everything remembered is in the synced file
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
