package pgstore_test

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// goldenRecords are records with their header column as this package
// stored it before the encoding moved to package keystore ("" for NULL):
// rows already in PostgreSQL must still be read, and compared by a repeated
// Complete, after an upgrade.
var goldenRecords = []struct {
	rec    record.Record
	header string
}{
	{
		record.Record{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}, "Link": {"</a>", "</b>"}, "Empty": {}}, Body: []byte(`{"id":1}`)},
		"030c436f6e74656e742d5479706501106170706c69636174696f6e2f6a736f6e05456d70747900044c696e6b02043c2f613e043c2f623e",
	},
	{record.Record{StatusCode: 204}, ""},
	{record.Record{StatusCode: 204, Header: http.Header{}}, "00"},
	{record.Record{StatusCode: 599, Header: http.Header{"X": {"\x00\xff"}}, Body: []byte{0x80, 0x80, 0x80}}, "010158010200ff"},
}

func goldenHeader(t *testing.T, s string) []byte {
	t.Helper()
	if s == "" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CompleteTx, which takes a Record, stores each golden record exactly as
// before. Complete takes the record's encoding (record.Append), in
// which a nil header and one without fields are the same bytes, as are a
// nil body and an empty one: it stores both as the nil ones were (NULL),
// and every other header and body exactly as before.
func TestGoldenRecordsAreStoredAsBefore(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	stored := func(key string) (status int32, header, body []byte) {
		t.Helper()
		err := pool.QueryRow(testCtx(t), "SELECT status, header, body FROM "+s.Table()+" WHERE key = $1", key).Scan(&status, &header, &body)
		if err != nil {
			t.Fatal(err)
		}
		return status, header, body
	}
	for _, g := range goldenRecords {
		key := keystoretest.Key(t)
		c := claim(t, s, key, time.Minute, acquire)
		if err := s.Complete(testCtx(t), key, c.Token, record.Append(nil, g.rec), time.Hour); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		want, wantBody := goldenHeader(t, g.header), g.rec.Body
		if len(g.rec.Header) == 0 {
			want = nil
		}
		if len(wantBody) == 0 {
			wantBody = nil
		}
		if status, header, body := stored(key); int(status) != g.rec.StatusCode || !reflect.DeepEqual(header, want) || !reflect.DeepEqual(body, wantBody) {
			t.Errorf("Complete(%+v) stored status %d, header %x, body %q; want header %x, body %q", g.rec, status, header, body, want, wantBody)
		}

		key = keystoretest.Key(t)
		c = claim(t, s, key, time.Minute, acquire)
		tx, err := pool.Begin(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CompleteTx(testCtx(t), tx, &keystore.Hold{Key: key, Token: c.Token, Retention: time.Hour}, pgstore.Record(g.rec)); err != nil {
			t.Fatalf("CompleteTx: %v", err)
		}
		if err := tx.Commit(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		want = goldenHeader(t, g.header)
		if status, header, body := stored(key); int(status) != g.rec.StatusCode || !reflect.DeepEqual(header, want) || !reflect.DeepEqual(body, g.rec.Body) {
			t.Errorf("CompleteTx(%+v) stored status %d, header %x, body %q; want header %q", g.rec, status, header, body, g.header)
		}
	}
}

func TestGoldenRecordsAreReadAsBefore(t *testing.T) {
	t.Parallel()
	pool := newPool(t, 4, nil)
	s := newStore(t, pool, pgstore.Config{})
	const token = 1 << 40
	for _, g := range goldenRecords {
		key := keystoretest.Key(t)
		_, err := pool.Exec(testCtx(t), "INSERT INTO "+s.Table()+` (key, fingerprint, token, expires_at, status, header, body)
			VALUES ($1, $2, $3, clock_timestamp() + interval '1 hour', $4, $5, $6)`,
			key, fp[:], int64(token), int32(g.rec.StatusCode), goldenHeader(t, g.header), g.rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		c := claim(t, s, key, time.Minute, keystore.Completed)
		// The columns come back as the bytes of the record they hold (a
		// nil and an empty header, or body, encode alike).
		if !bytes.Equal(c.Record, record.Append(nil, g.rec)) {
			got, err := record.Decode(c.Record)
			t.Errorf("Claim of the stored header %q = %x (%+v, %v), want %+v encoded", g.header, c.Record, got, err, g.rec)
		}
		// A Complete repeated by the completing token with an equal record
		// compares its header encoding with the stored one.
		if err := s.Complete(testCtx(t), key, token, record.Append(nil, g.rec), time.Hour); err != nil {
			t.Errorf("repeated Complete of the stored header %q: %v", g.header, err)
		}
	}
}
