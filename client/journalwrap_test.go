package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// refusingJournal wraps a FileJournal by embedding it, as a user adding
// metrics or a quota would, and refuses every Record.
type refusingJournal struct {
	*client.FileJournal
	records atomic.Int32
}

var errQuota = errors.New("journal quota reached")

func (j *refusingJournal) Record(context.Context, client.JournalEntry) (client.JournalEntry, error) {
	j.records.Add(1)
	return client.JournalEntry{}, errQuota
}

// TestOutboxWrappedFileJournalUsesRecord: an Outbox over a type that embeds
// a FileJournal records through that type's Record, not around it: the
// overlap of the first attempt with the sync is a FileJournal's own, and a
// wrapper that refuses a record sends nothing.
func TestOutboxWrappedFileJournalUsesRecord(t *testing.T) {
	rv := newArrivals()
	srv := httptest.NewServer(rv)
	defer srv.Close()
	fj, err := client.OpenFileJournal(filepath.Join(t.TempDir(), "journal"), client.FileJournalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer fj.Close()
	j := &refusingJournal{FileJournal: fj}
	s, err := client.New(nil, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.NewOutbox(s, j).Deliver(context.Background(), client.Delivery{URL: srv.URL, Key: "k1", Body: []byte(`{}`)})
	if !errors.Is(err, client.ErrNotJournaled) || !errors.Is(err, errQuota) {
		t.Errorf("Deliver over a journal whose Record refuses: %v, want ErrNotJournaled wrapping the refusal", err)
	}
	if n := j.records.Load(); n != 1 {
		t.Errorf("the wrapper's Record ran %d times, want 1", n)
	}
	select {
	case k := <-rv.keys:
		t.Errorf("delivery %q sent though its record was refused", k)
	default:
	}
}
