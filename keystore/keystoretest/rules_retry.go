package keystoretest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// retryFill is the most new keys ReleasedKeyRetryNeverRefused claims for
// one client, looking for a refusal.
const retryFill = 256

// A retry of a released key is never refused: the request was answered
// 5xx and its key released, and its sender's retry must run, whatever
// the client has claimed since and however many of its new keys the
// store refuses (its ClientBound, the store's room). The rule
// claims new keys for one client until the store refuses one (or
// retryFill), then for another client likewise, then releases keys the
// first client holds and claims each again for it, several times: each
// is acquired.
func testReleasedKeyRetryNeverRefused(t *testing.T, s keystore.Store) {
	client := "client-" + Key(t)[:12]
	type held struct {
		key string
		tok keystore.Token
	}
	var (
		holds   []held
		refusal error
		claimed int
	)
	for i := range retryFill {
		key := Key(t)
		c, err := claimFor(t, s, key, client)
		if errors.Is(err, keystore.ErrStoreFull) {
			refusal = err
			break
		}
		if err != nil || !c.Acquired {
			t.Fatalf("new key %d for the client: acquired %v, err %v; want it acquired or refused with ErrStoreFull", i+1, c.Acquired, err)
		}
		claimed++
		if i%2 == 1 {
			if err := s.Complete(ctx(t), key, c.Token, record.Append(nil, sampleRecord()), longRetention); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			continue
		}
		holds = append(holds, held{key, c.Token})
	}
	if len(holds) == 0 {
		t.Fatalf("the store refused the client's first new key (%v): nothing to release", refusal)
	}
	// Another client claims what it may too: the store is as contended
	// as the two can make it.
	other := "client-" + Key(t)[:12]
	for i := range retryFill {
		c, err := claimFor(t, s, Key(t), other)
		if errors.Is(err, keystore.ErrStoreFull) {
			break
		}
		if err != nil || !c.Acquired {
			t.Fatalf("another client's new key %d: acquired %v, err %v; want it acquired or refused with ErrStoreFull", i+1, c.Acquired, err)
		}
	}
	after := fmt.Sprintf("after %d new keys acquired for the client and none refused", claimed)
	if refusal != nil {
		after = fmt.Sprintf("after %d new keys acquired for the client and the next refused (%v)", claimed, refusal)
	}
	holds = holds[:min(len(holds), 4)]
	for round := range 3 {
		for i, h := range holds {
			if err := s.Release(ctx(t), h.key, h.tok); err != nil {
				t.Fatalf("Release of the client's key %d: %v", i+1, err)
			}
			c, err := claimFor(t, s, h.key, client)
			if err != nil || !c.Acquired {
				t.Fatalf("%s: the retry of its released key %d (round %d): acquired %v, state %v, err %v; want it acquired: a retry of a released key is never refused",
					after, i+1, round+1, c.Acquired, c.State, err)
			}
			holds[i].tok = c.Token
		}
	}
	if refusal == nil {
		t.Logf("the store refused none of the client's %d new keys: the rule held only below any bound", retryFill)
	}
}
