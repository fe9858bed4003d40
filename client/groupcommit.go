package client

import (
	"fmt"
	"os"
)

// append adds one line to the buffer. With write, it writes the buffer at
// once unless a sync is in progress: then the next sync writes it.
// (Writing while the file syncs can block on the page under writeback, and
// with j.mu held that would stall every delivery.) Without write, the
// caller is about to wait for the line's sync, whose leader writes the
// buffer and syncs it: one write per batch. j.mu is held.
func (j *FileJournal) append(line []byte, write bool) error {
	j.buf = append(j.buf, line...)
	j.lines++
	j.appended++
	if j.syncing || !write {
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
// writes them with one Write and syncs the file's data (fdatasync where
// there is one, see [syncData]) with j.mu released, so that the lines
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
		op := "write"
		var err error
		if len(batch) > 0 {
			_, err = f.Write(batch)
		}
		if err == nil {
			op, err = "sync", syncData(f)
		}
		j.mu.Lock()
		j.spare = batch
		j.syncing = false
		if err != nil {
			j.err = fmt.Errorf("client: journal %s: %w", op, err)
		} else {
			j.synced = max(j.synced, target)
			j.syncs++
		}
		j.cond.Broadcast()
	}
	return nil
}

// syncData flushes what was written to f, and the size needed to read it
// back, to stable storage: fdatasync(2) on the journal's own files, which
// does not wait for the timestamps that fsync would also write. A file a
// test wraps is synced with its own Sync.
func syncData(f journalFile) error {
	if osf, ok := f.(*os.File); ok {
		return datasync(osf)
	}
	return f.Sync()
}
