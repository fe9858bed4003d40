package memstore_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// encodedStore completes through CompleteEncoded, with the record's
// encoding, so that the conformance suite checks that path too.
type encodedStore struct{ *memstore.Store }

func (s encodedStore) Complete(ctx context.Context, key string, token keystore.Token, rec keystore.Record, retention time.Duration) error {
	return s.CompleteEncoded(ctx, key, token, keystore.AppendRecord(nil, rec), retention)
}

func TestConformanceEncoded(t *testing.T) {
	keystoretest.Run(t, func(t *testing.T) keystore.Store { return encodedStore{new(memstore.Store)} })
}

func TestCompletesEncodedIsNotInherited(t *testing.T) {
	s := new(memstore.Store)
	if _, ok := keystore.CompletesEncoded(s); !ok {
		t.Error("CompletesEncoded(*memstore.Store) = false")
	}
	if _, ok := keystore.CompletesEncoded(encodedStore{s}); ok {
		t.Error("CompletesEncoded of a wrapper embedding a *memstore.Store = true, want false: its Complete is not the store's")
	}
}

func TestCompleteEncoded(t *testing.T) {
	ctx := context.Background()
	s := new(memstore.Store)
	c := claim(t, s, "k", time.Minute)
	rec := keystore.Record{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}, "Etag": {`"1"`}}, Body: []byte(`{"id":1}`)}
	enc := keystore.AppendRecord(nil, rec)

	unsorted := []byte("\x92\x03\x02\x01b\x00\x01a\x00")
	if err := s.CompleteEncoded(ctx, "k", c.Token, unsorted, time.Minute); !errors.Is(err, keystore.ErrCorruptRecord) {
		t.Fatalf("CompleteEncoded with fields out of order: %v, want ErrCorruptRecord", err)
	}
	if err := s.CompleteEncoded(ctx, "k", c.Token, enc[:len(enc)-len(rec.Body)-1], time.Minute); !errors.Is(err, keystore.ErrCorruptRecord) {
		t.Fatalf("CompleteEncoded of a truncated encoding: %v, want ErrCorruptRecord", err)
	}
	if got := claim(t, s, "k", time.Minute); got.State != keystore.InFlight {
		t.Fatalf("after refused encodings: %v, want still in flight", got.State)
	}
	if err := s.CompleteEncoded(ctx, "k", c.Token, enc, time.Minute); err != nil {
		t.Fatal(err)
	}
	clear(enc) // the store kept a copy
	got := claim(t, s, "k", time.Minute)
	if got.State != keystore.Completed || got.Record.StatusCode != 201 || string(got.Record.Body) != `{"id":1}` ||
		got.Record.Header.Get("Etag") != `"1"` || got.Record.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("after CompleteEncoded: %v %+v", got.State, got.Record)
	}
	// A repeat with the equal record, encoded or not, succeeds; another
	// record is refused.
	if err := s.CompleteEncoded(ctx, "k", c.Token, keystore.AppendRecord(nil, rec), time.Minute); err != nil {
		t.Errorf("CompleteEncoded repeated: %v", err)
	}
	if err := s.Complete(ctx, "k", c.Token, rec, time.Minute); err != nil {
		t.Errorf("Complete repeating CompleteEncoded: %v", err)
	}
	if err := s.CompleteEncoded(ctx, "k", c.Token, keystore.AppendRecord(nil, keystore.Record{StatusCode: 202}), time.Minute); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("CompleteEncoded repeated with another record: %v, want ErrLeaseLost", err)
	}
}
