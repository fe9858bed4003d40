package redisstore_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// A Complete by a token that lost the key, from the Store that claimed it
// (which remembers the claim's fingerprint and so writes the record with
// one SET … GET, putting back what it replaced when that was not its own
// entry), changes nothing: neither the new holder's entry nor its expiry,
// nor a record completed since, nor its retention.
func TestCompleteByLostTokenChangesNothing(t *testing.T) {
	client := standaloneClient(t)
	ctx := context.Background()
	owner := newStore(t, client, client, redisstore.Config{})
	other, err := redisstore.New(client, redisstore.Config{KeyPrefix: prefixOf(owner), Durability: redisstore.AcceptVolatile})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.Record{StatusCode: 201, Body: []byte("late")}
	theirs := record.Record{StatusCode: 202, Body: []byte("theirs")}

	for _, completeTheirs := range []bool{false, true} {
		key := keystoretest.Key(t)
		first, err := newClaim(ctx, owner, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil || !first.Acquired {
			t.Fatalf("Claim: %v %v", first.State, err)
		}
		if _, err := owner.Free(ctx, key, true); err != nil {
			t.Fatalf("Free: %v", err)
		}
		second, err := newClaim(ctx, other, key, keystore.Fingerprint{2}, 10*time.Minute)
		if err != nil || !second.Acquired {
			t.Fatalf("second Claim: %v %v", second.State, err)
		}
		if completeTheirs {
			if err := other.Complete(ctx, key, second.Token, encode(theirs), time.Hour); err != nil {
				t.Fatalf("their Complete: %v", err)
			}
		}
		readStart := time.Now()
		before, err := owner.Inspect(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := owner.Complete(ctx, key, first.Token, encode(rec), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
			t.Fatalf("late Complete (their record stored: %v) = %v, want ErrLeaseLost", completeTheirs, err)
		}
		after, err := owner.Inspect(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if after.State != before.State || after.Token != second.Token || after.Fingerprint != (keystore.Fingerprint{2}) {
			t.Fatalf("after the late Complete: %+v, want %+v", after, before)
		}
		// The expiry is put back exactly: the two reads differ by no more
		// than the time between them (and a millisecond of rounding).
		apart := time.Since(readStart) + time.Millisecond
		if d := before.LeaseRemaining + before.RetentionRemaining - after.LeaseRemaining - after.RetentionRemaining; d < 0 || d > apart {
			t.Fatalf("the late Complete moved the expiry: before %+v, after %+v", before, after)
		}
		if completeTheirs {
			if string(testkit.Decoded(after.Record).Body) != "theirs" || after.RetentionRemaining < 59*time.Minute {
				t.Fatalf("their record after the late Complete: %+v", after)
			}
			continue
		}
		if after.LeaseRemaining < 9*time.Minute {
			t.Fatalf("their lease after the late Complete: %+v", after)
		}
		if err := other.Complete(ctx, key, second.Token, encode(theirs), time.Hour); err != nil {
			t.Fatalf("their Complete after the late one: %v", err)
		}
	}
}

// A Complete repeated by the token that completed the key, with the same
// record, succeeds and changes nothing, whether or not the Store still
// remembers the claim's fingerprint.
func TestCompleteRepeatedFromAnotherStore(t *testing.T) {
	client := standaloneClient(t)
	ctx := context.Background()
	s := newStore(t, client, client, redisstore.Config{})
	other, err := redisstore.New(client, redisstore.Config{KeyPrefix: prefixOf(s), Durability: redisstore.AcceptVolatile})
	if err != nil {
		t.Fatal(err)
	}
	key := keystoretest.Key(t)
	c, err := newClaim(ctx, s, key, keystore.Fingerprint{3}, time.Minute)
	if err != nil || !c.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	rec := record.Record{StatusCode: 201, Body: []byte("once")}
	// Completed by a Store that did not claim it: the fingerprint is read
	// from Redis.
	if err := other.Complete(ctx, key, c.Token, encode(rec), time.Hour); err != nil {
		t.Fatalf("Complete from another Store: %v", err)
	}
	for _, st := range []*redisstore.Store{s, other} {
		if err := st.Complete(ctx, key, c.Token, encode(rec), time.Hour); err != nil {
			t.Fatalf("repeated Complete: %v", err)
		}
	}
	got, err := newClaim(ctx, s, key, keystore.Fingerprint{3}, time.Minute)
	if err != nil || got.State != keystore.Completed || string(testkit.Decoded(got.Record).Body) != "once" || got.Fingerprint != (keystore.Fingerprint{3}) {
		t.Fatalf("replay: %+v %v", got, err)
	}
}

// Complete takes the record encoded (record.Append): it refuses an
// encoding that record.Check refuses, sending nothing and leaving
// the claim held; keeps a copy of one it accepts; and accepts a repeat
// with an equal record (equal encodings), whether the Store that completes
// made the claim (and remembers its fingerprint) or not.
func TestCompleteTakesEncoding(t *testing.T) {
	ctx := context.Background()
	client := standaloneClient(t)
	owner := newStore(t, client, client, redisstore.Config{})
	other, err := redisstore.New(client, redisstore.Config{KeyPrefix: prefixOf(owner), Durability: redisstore.AcceptVolatile})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.Record{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}, "Etag": {`"1"`}}, Body: []byte(`{"id":1}`)}
	for _, tc := range []struct {
		name      string
		completer *redisstore.Store
	}{{"ClaimingStore", owner}, {"OtherStore", other}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.completer
			key := keystoretest.Key(t)
			c, err := newClaim(ctx, owner, key, keystore.Fingerprint{7}, time.Minute)
			if err != nil || !c.Acquired {
				t.Fatalf("Claim: %v %v", c.State, err)
			}
			enc := record.Append(nil, rec)

			for _, bad := range []struct {
				name string
				enc  []byte
				want error
			}{
				{"fields out of order", []byte("\x92\x03\x02\x01b\x00\x01a\x00"), keystore.ErrCorruptRecord},
				{"truncated", enc[:len(enc)-len(rec.Body)-1], keystore.ErrCorruptRecord},
				{"empty", nil, keystore.ErrCorruptRecord},
				{"long varint", append([]byte{0x92 | 0x80, 0x83, 0x00}, enc[2:]...), keystore.ErrCorruptRecord},
				{"status 600", record.Append(nil, record.Record{StatusCode: 600}), keystore.ErrInvalidStatus},
			} {
				if err := s.Complete(ctx, key, c.Token, bad.enc, time.Minute); !errors.Is(err, bad.want) {
					t.Fatalf("Complete, %s: %v, want %v", bad.name, err, bad.want)
				}
			}
			if got, err := owner.Inspect(ctx, key); err != nil || got.State != keystore.InFlight || got.Token != c.Token {
				t.Fatalf("after refused encodings: %+v %v, want still in flight for the claim", got, err)
			}
			if err := s.Complete(ctx, key, c.Token, enc, time.Minute); err != nil {
				t.Fatal(err)
			}
			clear(enc) // the store kept a copy
			got, err := newClaim(ctx, owner, key, keystore.Fingerprint{7}, time.Minute)
			if err != nil || got.State != keystore.Completed || testkit.Decoded(got.Record).StatusCode != 201 || string(testkit.Decoded(got.Record).Body) != `{"id":1}` ||
				testkit.Decoded(got.Record).Header.Get("Etag") != `"1"` || testkit.Decoded(got.Record).Header.Get("Content-Type") != "application/json" {
				t.Fatalf("after Complete: %v %+v %v", got.State, got.Record, err)
			}
			// A repeat with the equal record succeeds, encoded afresh or
			// from a header map filled in another order; another record
			// is refused.
			if err := s.Complete(ctx, key, c.Token, record.Append(nil, rec), time.Minute); err != nil {
				t.Errorf("Complete repeated: %v", err)
			}
			same := record.Record{StatusCode: 201, Header: http.Header{}, Body: []byte(`{"id":1}`)}
			same.Header.Set("Etag", `"1"`)
			same.Header.Set("Content-Type", "application/json")
			if err := s.Complete(ctx, key, c.Token, record.Append(nil, same), time.Minute); err != nil {
				t.Errorf("Complete repeated with an equal record built another way: %v", err)
			}
			if err := s.Complete(ctx, key, c.Token, record.Append(nil, record.Record{StatusCode: 202}), time.Minute); !errors.Is(err, keystore.ErrLeaseLost) {
				t.Errorf("Complete repeated with another record: %v, want ErrLeaseLost", err)
			}
		})
	}
}

// prefixOf returns the KeyPrefix s was made with.
func prefixOf(s *redisstore.Store) string {
	k := s.RedisKey("")
	return k[:len(k)-2]
}
