package client

import (
	"errors"
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
	n, err := j.f.Write(j.buf)
	j.end += int64(n)
	j.reserved = max(j.reserved, j.end)
	if err != nil {
		j.err = fmt.Errorf("client: journal write: %w", err)
		return j.err
	}
	j.buf = j.buf[:0]
	return nil
}

// commit returns once append seq is on stable storage (durable) or, at
// least, written to the file (not durable). Unless another goroutine is
// writing or syncing already (then it waits for that to end), it becomes
// the leader: it takes every line buffered so far, writes them with one
// Write and syncs the file's data (fdatasync where there is one, see
// [syncData]) with j.mu released, so that the lines other goroutines
// append meanwhile form the next batch. A leader that need not wait for
// durability hands the sync to a goroutine of its own once the batch is
// written, and returns handed: the sync still holds the lead (j.syncing)
// until it ends, so the next batch is written after it. j.mu is held.
func (j *FileJournal) commit(seq uint64, durable bool) (handed bool, err error) {
	for j.synced < seq && (durable || j.written < seq) {
		if err := j.usable(); err != nil {
			return handed, err
		}
		if j.syncing {
			j.cond.Wait()
			continue
		}
		j.syncing = true
		batch, target, f := j.buf, j.appended, j.f
		end, reserved, prealloc, partly := j.end, j.reserved, !j.noRoom, false
		j.buf = j.spare[:0]
		j.mu.Unlock()
		if prealloc && end+int64(len(batch)) > reserved {
			size := max(journalPrealloc, int64(len(batch)))
			switch err := reserve(f, end, size); {
			case err == nil:
				reserved = end + size
			case errors.Is(err, errors.ErrUnsupported):
				prealloc = false
			default:
				prealloc, partly = false, true
			}
		}
		op := "write"
		var n int
		if len(batch) > 0 {
			n, err = f.Write(batch)
		}
		if err == nil && durable {
			op, err = "sync", syncData(f)
		}
		j.mu.Lock()
		j.end += int64(n)
		j.reserved = max(reserved, j.end)
		j.noRoom = !prealloc
		j.roomUnknown = j.roomUnknown || partly
		j.spare = batch
		if err == nil {
			j.written = max(j.written, target)
		}
		if err == nil && !durable {
			j.cond.Broadcast() // the batch's other records may be sent
			go j.syncBatch(f, target)
			handed = true
			continue
		}
		j.endSync(target, op, err)
	}
	return handed, nil
}

// syncBatch syncs f, to which the appends up to target were written, and
// ends the lead.
func (j *FileJournal) syncBatch(f journalFile, target uint64) {
	err := syncData(f)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.endSync(target, "sync", err)
}

// endSync ends a leader's write and sync of the appends up to target,
// which failed at op when err is not nil. j.mu is held.
func (j *FileJournal) endSync(target uint64, op string, err error) {
	j.syncing = false
	if err != nil {
		j.err = fmt.Errorf("client: journal %s: %w", op, err)
	} else {
		j.synced = max(j.synced, target)
		j.syncs++
	}
	j.cond.Broadcast()
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

// journalPrealloc is the room a FileJournal reserves past its last line
// when a batch does not fit in what is left.
const journalPrealloc = 1 << 20

// reserve preallocates size bytes of f from off (fallocate(2), growing the
// file, where there is one): writing there then neither allocates blocks
// nor grows the file, and a sync of the data waits for less. It fails
// where the platform or the file system cannot, or when the disk is full;
// the journal then appends as before. A file a test wraps is not
// preallocated.
func reserve(f journalFile, off, size int64) error {
	osf, ok := f.(*os.File)
	if !ok {
		return errors.ErrUnsupported
	}
	return fallocate(osf, off, size)
}
