package pgstore_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// kinds names the statements of s in sent (counter's, whitespace
// folded) by pgstore.StatementKinds, "other" for any it does not name.
func kinds(s *pgstore.Store, sent []string) []string {
	byText := map[string]string{}
	for sql, kind := range pgstore.StatementKinds(s) {
		byText[strings.Join(strings.Fields(sql), " ")] = kind
	}
	named := make([]string, len(sent))
	for i, sql := range sent {
		if named[i] = byText[sql]; named[i] == "" {
			named[i] = "other"
		}
	}
	return named
}

// A first completion, of the row the token holds in flight, is one
// statement that judges only that row (token, lease, in flight), not the
// one that compares a stored record with the new one, which a repeat of a
// completion needs: the record's comparison and its CASE expressions are
// planned and set up by the database on every run. A repeat with the same
// record still succeeds and one with another record still fails, by the
// statement that compares.
func TestCompleteOfHeldRowJudgesOnlyTheLease(t *testing.T) {
	tr := &counter{}
	pool := newPool(t, 2, tr)
	s := newStore(t, pool, pgstore.Config{})
	ctx := testCtx(t)
	key := keystoretest.Key(t)
	c := claim(t, s, key, time.Minute, acquire)
	tr.take()

	if err := s.Complete(ctx, key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(s, tr.take()), []string{"complete (held)"}; !slices.Equal(got, want) {
		t.Errorf("first completion sent %q, want %q", got, want)
	}

	if err := s.Complete(ctx, key, c.Token, jsonBytes("{}"), time.Hour); err != nil {
		t.Errorf("repeat with the same record: %v", err)
	}
	if got, want := kinds(s, tr.take()), []string{"complete (held)", "complete"}; !slices.Equal(got, want) {
		t.Errorf("repeated completion sent %q, want %q", got, want)
	}
	if err := s.Complete(ctx, key, c.Token, jsonBytes(`{"other":1}`), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("repeat with another record: %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx, key, c.Token+1, jsonBytes("{}"), time.Hour); !errors.Is(err, keystore.ErrLeaseLost) {
		t.Errorf("completion by another token: %v, want ErrLeaseLost", err)
	}
	if got := claim(t, s, key, time.Minute, keystore.Completed); !bytes.Equal(got.Record, jsonBytes("{}")) {
		t.Errorf("replayed record %q, want the first completion's", got.Record)
	}
}
