package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"
)

// Journal is the sender's durable outbox: the record of which key and which
// body bytes each delivery was first sent with, kept so that a sender that
// crashes, is run again or re-drives a dead letter sends those bytes under
// that key again, and the receiver answers from its record instead of
// executing the payload a second time.
//
// An entry is identified by its method, URL and key (the receiver's scope
// is at least method and path). Implementations must be safe for concurrent
// use by multiple goroutines. [FileJournal] is the embedded default.
type Journal interface {
	// Record makes e durable (written and synced to stable storage) before
	// it returns, and returns it. If an entry with e's identity is already
	// recorded, Record records nothing and returns that entry: the bytes
	// first recorded under an identity win, for as long as the journal
	// remembers it. The caller sends what Record returned, never e. The
	// entry returned should carry its Outcome and Ended when it is done
	// ([FileJournal]'s do): an [Outbox] does not send again an entry done
	// as [OutcomePermanent], and sends any entry without an outcome.
	Record(ctx context.Context, e JournalEntry) (JournalEntry, error)

	// Done marks the entry with e's identity as ended, with outcome (one
	// of the Outcome constants). It need not be synced: a mark lost in a
	// crash leaves the entry pending, and its re-send is answered from the
	// receiver's record. Done for an identity that is not recorded does
	// nothing.
	Done(ctx context.Context, e JournalEntry, outcome string) error

	// Pending returns the entries not marked done, in the order they were
	// recorded.
	Pending(ctx context.Context) ([]JournalEntry, error)
}

// Outcomes of a journal entry, as [Outbox] marks them.
const (
	OutcomeDelivered    = "delivered"     // a 2xx answer executed by this send
	OutcomeReplayed     = "replayed"      // a 2xx answer replayed from the receiver's record
	OutcomePermanent    = "permanent"     // refused by an answer no retry can fix
	OutcomeDeadLettered = "dead-lettered" // handed to the dead-letter sink
	OutcomeSentEarlier  = "sent-earlier"  // refused as key reuse: another payload of the event was sent first ([ErrSentEarlier])
)

// ErrRefusedEarlier is the error of an [Outbox.Deliver] that sent
// nothing because its journal records the entry as refused permanently
// ([OutcomePermanent]) by an earlier send: it is wrapped in a
// [*DeliveryError] whose Reason is [ErrPermanent], with 0 attempts, and
// is not dead-lettered again. [Outbox.Resend] sends such an entry.
var ErrRefusedEarlier = errors.New("client: refused permanently by an earlier send")

// errJournalClosed is returned by a closed [FileJournal].
var errJournalClosed = fmt.Errorf("client: journal: %w", os.ErrClosed)

// ErrJournalConflict reports a re-drive whose payload differs from the
// bytes the journal recorded under the same method, URL and key: sending
// it would make the receiver refuse it as key reuse. Nothing was sent.
var ErrJournalConflict = errors.New("client: journal holds other bytes under this key")

// JournalEntry is one delivery as a [Journal] records it: everything needed
// to send it again, byte for byte.
type JournalEntry struct {
	// Delivery is what the entry sends, every time: its method and
	// content type as recorded (POST and application/json when it had
	// none), its key (unencoded), its exact body and its extra headers.
	// The headers are written to the journal as they are: put credentials
	// in the http.Client's transport or in Config.PrepareAttempt, which
	// are never recorded.
	Delivery

	// Recorded is when the entry was first recorded; Outcome is "" while
	// it is pending, and Ended when it was marked done.
	Recorded time.Time
	Outcome  string
	Ended    time.Time
}

// journalEntry returns the entry of d, normalized: its method and content
// type defaulted, its body and header copied.
func journalEntry(d Delivery) JournalEntry {
	d.Header = d.Header.Clone()
	d.Body = append([]byte{}, d.Body...)
	e := JournalEntry{Delivery: d}
	if e.Method == "" {
		e.Method = http.MethodPost
	}
	if e.ContentType == "" {
		e.ContentType = defaultContentType
	}
	return e
}

// identity is what tells journal entries apart.
type identity struct{ method, url, key string }

func (e JournalEntry) identity() identity {
	m := e.Method
	if m == "" {
		m = http.MethodPost
	}
	return identity{m, e.URL, e.Key}
}
