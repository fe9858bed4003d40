package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
	rec := keystore.Record{StatusCode: 201, Body: []byte("late")}
	theirs := keystore.Record{StatusCode: 202, Body: []byte("theirs")}

	for _, completeTheirs := range []bool{false, true} {
		key := keystoretest.Key(t)
		first, err := owner.Claim(ctx, key, keystore.Fingerprint{1}, time.Minute)
		if err != nil || first.State != keystore.Acquired {
			t.Fatalf("Claim: %v %v", first.State, err)
		}
		if _, err := owner.Free(ctx, key, true); err != nil {
			t.Fatalf("Free: %v", err)
		}
		second, err := other.Claim(ctx, key, keystore.Fingerprint{2}, 10*time.Minute)
		if err != nil || second.State != keystore.Acquired {
			t.Fatalf("second Claim: %v %v", second.State, err)
		}
		if completeTheirs {
			if err := other.Complete(ctx, key, second.Token, theirs, time.Hour); err != nil {
				t.Fatalf("their Complete: %v", err)
			}
		}
		readStart := time.Now()
		before, err := owner.Inspect(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := owner.Complete(ctx, key, first.Token, rec, time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
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
			if string(after.Record.Body) != "theirs" || after.RetentionRemaining < 59*time.Minute {
				t.Fatalf("their record after the late Complete: %+v", after)
			}
			continue
		}
		if after.LeaseRemaining < 9*time.Minute {
			t.Fatalf("their lease after the late Complete: %+v", after)
		}
		if err := other.Complete(ctx, key, second.Token, theirs, time.Hour); err != nil {
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
	c, err := s.Claim(ctx, key, keystore.Fingerprint{3}, time.Minute)
	if err != nil || c.State != keystore.Acquired {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	rec := keystore.Record{StatusCode: 201, Body: []byte("once")}
	// Completed by a Store that did not claim it: the fingerprint is read
	// from Redis.
	if err := other.Complete(ctx, key, c.Token, rec, time.Hour); err != nil {
		t.Fatalf("Complete from another Store: %v", err)
	}
	for _, st := range []*redisstore.Store{s, other} {
		if err := st.Complete(ctx, key, c.Token, rec, time.Hour); err != nil {
			t.Fatalf("repeated Complete: %v", err)
		}
	}
	got, err := s.Claim(ctx, key, keystore.Fingerprint{3}, time.Minute)
	if err != nil || got.State != keystore.Completed || string(got.Record.Body) != "once" || got.Fingerprint != (keystore.Fingerprint{3}) {
		t.Fatalf("replay: %+v %v", got, err)
	}
}

// prefixOf returns the KeyPrefix s was made with.
func prefixOf(s *redisstore.Store) string {
	k := s.RedisKey("")
	return k[:len(k)-2]
}
