package client

// The overlap: an [Outbox] over a [*FileJournal] sends a record's first
// attempt while the record's sync runs, so that the first attempt costs no
// sync before it and a serial delivery costs about the longer of the two
// rather than their sum. Only a *FileJournal itself overlaps: any other
// Journal, a type that embeds a FileJournal included (its Record may do
// more, or refuse), is recorded, durably, by its own Record before the
// first attempt, as the interface says.
//
// The FileJournal's rule, on top of Journal's: recordWritten is Record,
// except that it returns once the entry's line is written to the
// journal's file (not yet synced), with the append that awaitSync waits
// for. It returns the entry Record would (the one first recorded under
// e's identity), and fails when the line cannot be written (a full disk):
// then nothing is sent. awaitSync returns
// once that append is on stable storage, or the error that keeps it from
// getting there (after which the journal takes no new entry, as after a
// failed Record); it may be called more than once, from any goroutine.
//
// The Outbox's rule: only the first attempt overlaps the sync. The
// delivery waits for the sync before anything else it does: a retry, a
// wait before one, a dead letter, a done mark, or returning. If the sync
// fails, a first attempt answered 2xx is a success all the same (the
// receiver holds the event; the sender's logger warns), and any other
// outcome ends the delivery as not journaled ([ErrNotJournaled],
// dead-lettered with the first attempt's answer), as when the record
// cannot be written: it does not go on retrying on a journal that cannot
// hold it. A re-drive of that dead letter sends the same bytes under the
// same key, a replay where the first attempt took effect.
//
// A crash of the machine (a power loss; a crash of the process alone does
// not, the line being written) while the sync runs can leave the receiver
// holding an event the journal lacks. Deliver had not returned, so its
// caller had no answer and runs it again after the crash: with the same
// bytes under the same key, the receiver replays its answer; with other bytes (a body stamped anew),
// the receiver refuses the key's reuse (422 key-reused), and the delivery
// ends with [ErrSentEarlier], as for any event sent by a run whose journal
// is gone.
//
// journalSync is the sync of a record that a delivery's first attempt
// overlaps, if any (j nil: none).
type journalSync struct {
	j   *FileJournal
	seq uint64
}

// wait returns once the record is on stable storage, or the sync's error.
func (js journalSync) wait() error {
	if js.j == nil {
		return nil
	}
	return js.j.awaitSync(js.seq)
}

// awaitJournal waits for the sync p's first attempt overlaps, once: later
// calls return nil at once.
func (s *Sender) awaitJournal(p *pending) error {
	js := p.journal
	p.journal = journalSync{}
	return js.wait()
}
