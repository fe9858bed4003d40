package memstore_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// Complete takes a record's encoding exactly as record.Append
// writes it (fields in name order), refuses any other bytes, keeps a copy,
// and accepts a repeat with an equal record only.
func TestCompleteTakesEncoding(t *testing.T) {
	ctx := context.Background()
	s := new(memstore.Store)
	c := claim(t, s, "k", time.Minute)
	rec := record.Record{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}, "Etag": {`"1"`}}, Body: []byte(`{"id":1}`)}
	enc := record.Append(nil, rec)

	unsorted := []byte("\x92\x03\x02\x01b\x00\x01a\x00")
	if err := s.Complete(ctx, "k", c.Token, unsorted, time.Minute); !errors.Is(err, keystore.ErrCorruptRecord) {
		t.Fatalf("Complete with fields out of order: %v, want ErrCorruptRecord", err)
	}
	if err := s.Complete(ctx, "k", c.Token, enc[:len(enc)-len(rec.Body)-1], time.Minute); !errors.Is(err, keystore.ErrCorruptRecord) {
		t.Fatalf("Complete of a truncated encoding: %v, want ErrCorruptRecord", err)
	}
	if got := claim(t, s, "k", time.Minute); got.State != keystore.InFlight {
		t.Fatalf("after refused encodings: %v, want still in flight", got.State)
	}
	if err := s.Complete(ctx, "k", c.Token, enc, time.Minute); err != nil {
		t.Fatal(err)
	}
	clear(enc) // the store kept a copy
	got := claim(t, s, "k", time.Minute)
	if got.State != keystore.Completed || testkit.Decoded(got.Record).StatusCode != 201 || string(testkit.Decoded(got.Record).Body) != `{"id":1}` ||
		testkit.Decoded(got.Record).Header.Get("Etag") != `"1"` || testkit.Decoded(got.Record).Header.Get("Content-Type") != "application/json" {
		t.Fatalf("after Complete: %v %+v", got.State, got.Record)
	}
	// A repeat with the equal record, encoded or not, succeeds; another
	// record is refused.
	if err := s.Complete(ctx, "k", c.Token, record.Append(nil, rec), time.Minute); err != nil {
		t.Errorf("Complete repeated: %v", err)
	}
	if err := s.Complete(ctx, "k", c.Token, record.Append(nil, rec), time.Minute); err != nil {
		t.Errorf("Complete of the Record repeating Complete: %v", err)
	}
	if err := s.Complete(ctx, "k", c.Token, record.Append(nil, record.Record{StatusCode: 202}), time.Minute); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("Complete repeated with another record: %v, want ErrLeaseLost", err)
	}
}
