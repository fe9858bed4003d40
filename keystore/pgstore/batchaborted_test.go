package pgstore_test

import (
	"bytes"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// A batch of claims that the database aborts every time it runs (a
// serialization failure, as under SERIALIZABLE when many batches of one
// client's claims run at once on a loaded machine) fails none of its
// claims: once the batch's retries are spent, each claim runs a statement
// of its own. Here every batch statement raises SQLSTATE 40001 while a
// claim alone succeeds; 64 concurrent claims on a pool of 4 (two claim
// statements at once, the rest batched), unbounded and then bounded, all
// acquire their keys.
func TestAbortedBatchClaimsRunAlone(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	ctx := testCtx(t)
	fail := abortingFunction(t, pool, schema)
	s := newStore(t, pool, pgstore.Config{Schema: schema, ClientKeys: 1000})
	args := `$1::text[]::text, $2::bytea[]::text, $3::bigint[]::text, $4::bigint[]::text`
	pgstore.SetBatchClaimSQL(s, `SELECT `+fail+`(`+args+`)`,
		`SELECT `+fail+`(`+args+`, $5::text[]::text, $6::integer::text, $7::bigint::text)`)
	prefix := keystoretest.Key(t)[:16]
	for _, client := range []string{"", "client-1"} {
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 64 {
			key := prefix + client + "-" + strconv.Itoa(i)
			wg.Go(func() {
				c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: time.Minute, Token: keystore.NewToken(), Client: client})
				switch {
				case err != nil:
					errs <- err
				case !c.Acquired:
					errs <- &claimError{key: key, state: c.State}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("client %q: %v", client, err)
		}
	}
}

// The same for completions: a batch of completions that the database
// aborts every time it runs fails none of them once its retries are
// spent; each runs alone, and every record is kept.
func TestAbortedBatchCompletionsRunAlone(t *testing.T) {
	pool := newPool(t, 4, nil)
	schema := newSchema(t, pool)
	ctx := testCtx(t)
	fail := abortingFunction(t, pool, schema)
	s := newStore(t, pool, pgstore.Config{Schema: schema})
	pgstore.SetBatchCompleteSQL(s, `SELECT `+fail+`($1::text[]::text, $2::bigint[]::text, $3::integer[]::text, $4::bytea[]::text, $5::bytea[]::text, $6::bigint[]::text)`)
	prefix := keystoretest.Key(t)[:16]
	tokens := make([]keystore.Token, 64)
	for i := range tokens {
		tokens[i] = claim(t, s, prefix+strconv.Itoa(i), time.Minute, acquire).Token
	}
	var wg sync.WaitGroup
	for i, tok := range tokens {
		wg.Go(func() {
			if err := s.Complete(ctx, prefix+strconv.Itoa(i), tok, jsonBytes(strconv.Itoa(i)), time.Hour); err != nil {
				t.Errorf("Complete %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i := range tokens {
		if c := claim(t, s, prefix+strconv.Itoa(i), time.Minute, keystore.Completed); !bytes.Equal(c.Record, jsonBytes(strconv.Itoa(i))) {
			t.Errorf("key %d replays %q, want its record", i, c.Record)
		}
	}
}

// abortingFunction creates, in schema, a function of any text arguments
// that fails with a serialization failure, and returns its name.
func abortingFunction(t *testing.T, pool *pgxpool.Pool, schema string) string {
	t.Helper()
	fail := pgx.Identifier{schema, "abort_batch"}.Sanitize()
	if _, err := pool.Exec(testCtx(t), `CREATE FUNCTION `+fail+`(VARIADIC text[]) RETURNS integer LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'batch aborted by the test' USING ERRCODE = 'serialization_failure'; END $$`); err != nil {
		t.Fatal(err)
	}
	return fail
}

type claimError struct {
	key   string
	state keystore.State
}

func (e *claimError) Error() string { return e.key + ": not acquired, " + e.state.String() }
