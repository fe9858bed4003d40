package redisstore_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// encodedStore completes through CompleteEncoded, with the record's
// encoding, so that the conformance suite checks that path too.
type encodedStore struct{ *redisstore.Store }

func (s encodedStore) Complete(ctx context.Context, key string, token keystore.Token, rec keystore.Record, retention time.Duration) error {
	return s.CompleteEncoded(ctx, key, token, keystore.AppendRecord(nil, rec), retention)
}

func TestConformanceEncoded(t *testing.T) { conformance(t, onStandalone, encoded) }

func TestConformanceEncodedCluster(t *testing.T) { conformance(t, onCluster, encoded) }

func encoded(s *redisstore.Store) keystore.Store { return encodedStore{s} }

func TestCompletesEncodedIsNotInherited(t *testing.T) {
	client := standaloneClient(t)
	s := newStore(t, client, client, redisstore.Config{})
	if ec, ok := keystore.CompletesEncoded(s); !ok || ec != keystore.EncodedCompleter(s) {
		t.Error("CompletesEncoded(*redisstore.Store) = false")
	}
	if _, ok := keystore.CompletesEncoded(encodedStore{s}); ok {
		t.Error("CompletesEncoded of a wrapper embedding a *redisstore.Store = true, want false: its Complete is not the store's")
	}
}

// CompleteEncoded refuses an encoding that keystore.CheckRecord refuses,
// sending nothing; keeps a copy of one it accepts; and accepts a repeat as
// Complete does, whether the Store that completes made the claim (and
// remembers its fingerprint) or not.
func TestCompleteEncoded(t *testing.T) {
	ctx := context.Background()
	client := standaloneClient(t)
	owner := newStore(t, client, client, redisstore.Config{})
	other, err := redisstore.New(client, redisstore.Config{KeyPrefix: prefixOf(owner), Durability: redisstore.AcceptVolatile})
	if err != nil {
		t.Fatal(err)
	}
	rec := keystore.Record{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}, "Etag": {`"1"`}}, Body: []byte(`{"id":1}`)}
	for _, tc := range []struct {
		name      string
		completer *redisstore.Store
	}{{"ClaimingStore", owner}, {"OtherStore", other}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.completer
			key := keystoretest.Key(t)
			c, err := owner.Claim(ctx, key, keystore.Fingerprint{7}, time.Minute)
			if err != nil || c.State != keystore.Acquired {
				t.Fatalf("Claim: %v %v", c.State, err)
			}
			enc := keystore.AppendRecord(nil, rec)

			for _, bad := range []struct {
				name string
				enc  []byte
				want error
			}{
				{"fields out of order", []byte("\x92\x03\x02\x01b\x00\x01a\x00"), keystore.ErrCorruptRecord},
				{"truncated", enc[:len(enc)-len(rec.Body)-1], keystore.ErrCorruptRecord},
				{"empty", nil, keystore.ErrCorruptRecord},
				{"long varint", append([]byte{0x92 | 0x80, 0x83, 0x00}, enc[2:]...), keystore.ErrCorruptRecord},
				{"status 600", keystore.AppendRecord(nil, keystore.Record{StatusCode: 600}), keystore.ErrInvalidStatus},
			} {
				if err := s.CompleteEncoded(ctx, key, c.Token, bad.enc, time.Minute); !errors.Is(err, bad.want) {
					t.Fatalf("CompleteEncoded, %s: %v, want %v", bad.name, err, bad.want)
				}
			}
			if got, err := owner.Inspect(ctx, key); err != nil || got.State != keystore.Held || got.Token != c.Token {
				t.Fatalf("after refused encodings: %+v %v, want still in flight for the claim", got, err)
			}
			if err := s.CompleteEncoded(ctx, key, c.Token, enc, time.Minute); err != nil {
				t.Fatal(err)
			}
			clear(enc) // the store kept a copy
			got, err := owner.Claim(ctx, key, keystore.Fingerprint{7}, time.Minute)
			if err != nil || got.State != keystore.Completed || got.Record.StatusCode != 201 || string(got.Record.Body) != `{"id":1}` ||
				got.Record.Header.Get("Etag") != `"1"` || got.Record.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("after CompleteEncoded: %v %+v %v", got.State, got.Record, err)
			}
			// A repeat with the equal record, encoded or not, succeeds;
			// another record is refused.
			if err := s.CompleteEncoded(ctx, key, c.Token, keystore.AppendRecord(nil, rec), time.Minute); err != nil {
				t.Errorf("CompleteEncoded repeated: %v", err)
			}
			if err := s.Complete(ctx, key, c.Token, rec, time.Minute); err != nil {
				t.Errorf("Complete repeating CompleteEncoded: %v", err)
			}
			if err := s.CompleteEncoded(ctx, key, c.Token, keystore.AppendRecord(nil, keystore.Record{StatusCode: 202}), time.Minute); !errors.Is(err, keystore.ErrLeaseLost) {
				t.Errorf("CompleteEncoded repeated with another record: %v, want ErrLeaseLost", err)
			}
		})
	}
}
