package record_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

func TestRecordValidate(t *testing.T) {
	for code, ok := range map[int]bool{
		0: false, -200: false, 100: false, 101: false, 199: false,
		200: true, 201: true, 422: true, 599: true,
		600: false, 999: false, 1 << 20: false,
	} {
		err := record.Record{StatusCode: code}.Validate()
		if ok && err != nil {
			t.Errorf("Validate of status %d: %v, want nil", code, err)
		}
		if !ok && !errors.Is(err, keystore.ErrInvalidStatus) {
			t.Errorf("Validate of status %d: err = %v, want one wrapping ErrInvalidStatus", code, err)
		}
	}
}

// TestTooLargeRecordFitsMinRecordBytes: the record kept in place of a
// response too large to record fits the least bound a caller may set, for
// every final status, so that a store that reserved that much has room.
func TestTooLargeRecordFitsMinRecordBytes(t *testing.T) {
	for status := record.MinStatusCode; status <= record.MaxStatusCode; status++ {
		rec := record.TooLarge(status)
		if n := record.Len(rec); n > record.MinBytes {
			t.Fatalf("TooLarge(%d) encodes to %d bytes, over MinBytes %d", status, n, record.MinBytes)
		}
		if rec.StatusCode != status {
			t.Fatalf("TooLarge(%d) has status %d", status, rec.StatusCode)
		}
		if h := rec.Header; h.Get("Content-Type") != "application/problem+json" || h.Get("Cache-Control") != "no-store" || len(h) != 2 {
			t.Fatalf("TooLargeRecord(%d) has header %v, want a problem document's, not to be cached, and nothing else", status, h)
		}
	}
}

// TestFit: Fit keeps a record within MaxRecordBytes (the bound
// included) and replaces a larger one, headers counted.
func TestFit(t *testing.T) {
	rec := record.Record{StatusCode: 201, Header: http.Header{"Link": {strings.Repeat("x", 100)}}}
	n := record.Len(rec)
	for _, c := range []struct {
		max  int
		keep bool
	}{{0, true}, {n, true}, {n - 1, false}} {
		got := record.Fit(c.max, rec)
		if kept := got.Header.Get("Link") != ""; kept != c.keep {
			t.Errorf("MaxRecordBytes %d, a record of %d bytes: kept = %v, want %v", c.max, n, kept, c.keep)
		}
		if got.StatusCode != 201 {
			t.Errorf("MaxRecordBytes %d: status %d, want 201", c.max, got.StatusCode)
		}
	}
}
