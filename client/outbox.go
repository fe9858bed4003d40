package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// Outbox delivers through a [Sender] after recording each delivery in a
// [Journal], so that the key and the exact body bytes of a delivery survive
// the sender's own crash and are the ones every attempt, every re-run and
// every re-drive sends. It is safe for concurrent use.
//
// Over a [FileJournal], a delivery's first attempt goes out once its
// record is written to the file, while the record's sync runs, and the
// rest of the delivery waits for that sync (see [Outbox.Deliver]). Over
// any other Journal, a type that embeds a FileJournal included, the
// record is durable, by that Journal's own Record, before the first
// attempt.
type Outbox struct {
	sender  *Sender
	journal Journal
}

// NewOutbox returns an outbox that records in j and delivers with s.
func NewOutbox(s *Sender, j Journal) *Outbox {
	return &Outbox{sender: s, journal: j}
}

// Deliver records d in the journal and delivers what the journal holds
// under d's method, URL and key: d itself the first time, and the bytes
// first recorded when the identity is already there (a re-run, or a
// resumed crash), so that the receiver replays its answer rather than
// refusing another payload under the same key or executing it again.
//
// The record is durable before the delivery does anything but its first
// attempt. Over a [FileJournal], the first attempt goes out once the
// record is written, while its sync (shared with concurrent deliveries)
// runs; the delivery then waits for the sync before a retry, a wait for
// one, a dead letter, a done mark, or returning. Over any other Journal,
// Record makes it durable before the first attempt. A crash of the
// process while the sync runs loses nothing (the record is written); a
// crash of the machine (a power loss) may leave the receiver holding an
// event the journal lacks. Deliver had not returned, so its caller runs
// it again: the same bytes under the same key are replayed, and other
// bytes (a body built anew) are answered 422 key-reused, which ends the
// delivery with [ErrSentEarlier] (below).
//
// The key names the event: a 422 key-reused answer (the receiver holds
// another payload under it, sent by an earlier run whose journal is gone)
// ends the delivery with [ErrSentEarlier], not [ErrPermanent], and is not
// dead-lettered.
//
// The entry is marked done when the delivery ends: delivered or replayed
// (a 2xx answer), refused permanently, sent earlier, or handed to the
// dead-letter sink.
// A delivery that ends otherwise (retries exhausted with no sink, the
// sink failed, or interrupted by [Sender.Stop]) stays pending in
// the journal, to be resumed ([Outbox.Resume]) or sent again by a re-run.
// After that stop, Deliver records and sends nothing and returns
// [ErrInterrupted].
//
// It fails before any I/O, recording nothing, for an invalid key, method or
// URL (as [Sender.Deliver]). When the journal cannot record d (a full disk;
// a failed sync, for a Journal other than a FileJournal), it sends nothing,
// hands d to the dead-letter sink (reason "not-journaled", 0 attempts, the
// journal's error as the last error; a re-drive sends it once there is
// room) and returns a [*DeliveryError] whose reason is [ErrNotJournaled].
// When a FileJournal's sync of the record fails during the first attempt,
// a 2xx answer is a success all the same (the receiver holds the event;
// the sender's logger warns, and the journal, which takes nothing more
// after a failed sync, keeps no done mark); any other answer ends the
// delivery there, without a retry, as not journaled: dead-lettered with
// that attempt's answer, its last error joining the journal's.
//
// An entry the journal records as refused permanently ([OutcomePermanent],
// by an earlier run) is not sent again: the receiver would refuse it
// again, and the dead-letter sink would get it twice. Deliver then sends
// nothing and returns a [*DeliveryError] whose Reason is [ErrPermanent],
// with 0 attempts and [ErrRefusedEarlier] as its error; nothing is
// dead-lettered. [Outbox.Resend] and [Outbox.Redrive] send it anyway.
func (o *Outbox) Deliver(ctx context.Context, d Delivery) (Result, error) {
	return o.deliver(ctx, d, false, false)
}

// Resend is [Outbox.Deliver], except that it also sends an entry the
// journal records as refused permanently (the receiver, or its rules, may
// have changed since): the bytes first recorded, under the same key.
func (o *Outbox) Resend(ctx context.Context, d Delivery) (Result, error) {
	return o.deliver(ctx, d, false, true)
}

// Redrive sends a dead letter's Delivery again under its original key,
// byte for byte, through the journal like [Outbox.Resend]
// (a dead letter refused permanently is sent too: re-driving it is the
// request). If the journal holds other bytes under the dead letter's
// method, URL and key, it sends nothing and fails with
// [ErrJournalConflict].
func (o *Outbox) Redrive(ctx context.Context, dl DeadLetter) (Result, error) {
	return o.deliver(ctx, dl.Delivery, true, true)
}

// Resume delivers every pending entry of the journal, one after another,
// and returns how many it delivered (2xx) and the errors of the others,
// joined.
func (o *Outbox) Resume(ctx context.Context) (delivered int, err error) {
	pending, err := o.journal.Pending(ctx)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, e := range pending {
		if _, err := o.Deliver(ctx, e.Delivery); err != nil {
			errs = append(errs, err)
			if errors.Is(err, ErrInterrupted) {
				break // the rest stays pending too
			}
			continue
		}
		delivered++
	}
	return delivered, errors.Join(errs...)
}

// deliver records d and sends what the journal holds. strict: fail
// rather than send other bytes than d's; resend: send an entry refused
// permanently too.
func (o *Outbox) deliver(ctx context.Context, d Delivery, strict, resend bool) (Result, error) {
	if _, err := EncodeKey(d.Key); err != nil {
		return Result{}, err
	}
	e := journalEntry(d)
	if err := checkTarget(e.Method, e.URL); err != nil {
		return Result{}, err
	}
	if stopped(o.sender.stop) { // nothing recorded, nothing sent: a re-run sends it
		return Result{}, &DeliveryError{Reason: ErrInterrupted, Key: d.Key}
	}
	rec, first, err := o.record(ctx, e)
	if err != nil {
		// Sending what a re-run could not send again is how an event runs
		// twice or is refused; not sending it without a trace is how it is
		// lost. So: not sent, and dead-lettered.
		return o.sender.notSent(ctx, d, ErrNotJournaled, fmt.Errorf("client: journal: %w", err))
	}
	conflict := strict && !bytes.Equal(rec.Body, e.Body)
	refused := rec.Outcome == OutcomePermanent && !resend
	if conflict || refused {
		// Not sent: the record durable first, as Record would have it.
		if err := first.wait(); err != nil {
			return o.sender.notSent(ctx, d, ErrNotJournaled, fmt.Errorf("client: journal: %w", err))
		}
	}
	if conflict {
		return Result{}, fmt.Errorf("%w: key %q", ErrJournalConflict, d.Key)
	}
	if refused {
		return Result{}, &DeliveryError{
			Reason: ErrPermanent,
			Key:    rec.Key,
			Err:    fmt.Errorf("%w at %s; not sent again", ErrRefusedEarlier, rec.Ended.Format(time.RFC3339)),
		}
	}
	res, err := o.sender.deliver(ctx, rec.Delivery, true, first)
	if first.wait() != nil {
		return res, err // the journal, whose sync failed, takes no done mark
	}
	if outcome := o.outcome(res, err); outcome != "" {
		if derr := o.journal.Done(context.WithoutCancel(ctx), rec, outcome); derr != nil {
			// The entry stays pending: a later re-send is a replay.
			o.sender.log.WarnContext(ctx, "client: journal", "key", rec.Key, "error", derr)
		}
	}
	return res, err
}

// record records e in the journal. Over a *FileJournal itself (not a type
// that embeds one: its Record is the one to run), it returns once e is
// written, with its sync still running: the first attempt overlaps it.
// Over any other Journal, e is durable when it returns.
func (o *Outbox) record(ctx context.Context, e JournalEntry) (JournalEntry, journalSync, error) {
	if fj, ok := o.journal.(*FileJournal); ok {
		rec, seq, err := fj.recordWritten(ctx, e)
		return rec, journalSync{fj, seq}, err
	}
	rec, err := o.journal.Record(ctx, e)
	return rec, journalSync{}, err
}

// outcome is how a delivery ended for the journal, or "" when it must stay
// pending.
func (o *Outbox) outcome(res Result, err error) string {
	if err == nil {
		if res.Replayed {
			return OutcomeReplayed
		}
		return OutcomeDelivered
	}
	if errors.Is(err, ErrPermanent) {
		return OutcomePermanent
	}
	if errors.Is(err, ErrSentEarlier) {
		return OutcomeSentEarlier
	}
	if errors.Is(err, ErrInterrupted) {
		return "" // not ended: a re-run sends it
	}
	var derr *DeliveryError
	// Deliver returns the *DeliveryError itself when the sink took the
	// dead letter, and joins it with the sink's error when it did not.
	if o.sender.sink != nil && errors.As(err, &derr) && err == error(derr) {
		return OutcomeDeadLettered
	}
	return ""
}
