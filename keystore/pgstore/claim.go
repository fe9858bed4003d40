package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// Claim implements [keystore.Store.Claim]. One statement settles the common
// cases: an absent key is inserted with the caller's token, and a key that
// is live (in flight with its lease running, or completed within its
// retention) is reported from a plain read: no write, no row lock, no
// insert set up (see fastClaimSQL), so any number of replays of one key
// run in parallel. A key whose
// lease or retention has ended is taken over, and a claim that lost the race
// for a new key reports the winner, by a second statement, which also
// refuses a fenced token (see releaseSQL). Leases are judged and
// LeaseRemaining computed by the database clock. A token must fit a
// bigint (keystore.NewToken's do). With Config.ClientKeys, a claim for a
// client runs fastClaimCountedSQL instead, which also reads and writes the
// client's count; claimSQL, for the rest, counts nothing (a key it
// inserts is one that another claim inserted and a janitor deleted
// meanwhile).
func (s *Store) Claim(ctx context.Context, key string, a keystore.ClaimArgs) (keystore.Claim, error) {
	if err := ctx.Err(); err != nil {
		return keystore.Claim{}, fmt.Errorf("pgstore: claim: %w", err)
	}
	if err := a.Validate(); err != nil {
		return keystore.Claim{}, err
	}
	if a.Token > math.MaxInt64 {
		return keystore.Claim{}, fmt.Errorf("%w: token %d does not fit a bigint (use keystore.NewToken)", keystore.ErrInvalidClaim, a.Token)
	}
	us, err := micros(a.Lease)
	if err != nil {
		return keystore.Claim{}, err
	}
	if s.room.Sample != nil {
		if err := s.full(ctx, key); err != nil {
			return keystore.Claim{}, err
		}
	}
	tok := int64(a.Token)
	call := new(struct {
		r claimRow
		p params
	})
	r, client := &call.r, ""
	var args []any
	if s.clientKeys > 0 && a.Client != "" {
		client = a.Client
		args = call.p.claimCounted(s.typedArgs, key, a.Fingerprint, us, tok, client, s.clientKeys, s.clientWindow)
	} else {
		args = call.p.claim(s.typedArgs, key, a.Fingerprint, us, tok)
	}
	err = s.fastClaim(ctx, r, args, key, a.Fingerprint, us, tok, client)
	switch {
	case err == nil && !r.acquired && r.token == -1: // the client is past its bound
		return keystore.Claim{}, &keystore.FullError{Client: true, RetryAfter: max(time.Duration(r.remaining)*time.Microsecond, time.Millisecond)}
	case err == nil && (r.acquired || r.remaining > 0):
		if r.acquired {
			r.fp, r.fpNull = a.Fingerprint, false
		}
		return r.claim(tok)
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return keystore.Claim{}, storeErr(ctx, "claim", err)
	}
	if err := s.queryClaim(ctx, s.sql.claim, r, args[:4]); err != nil {
		return keystore.Claim{}, storeErr(ctx, "claim", err)
	}
	return r.claim(tok)
}

func (s *Store) queryClaim(ctx context.Context, sql string, r *claimRow, args []any) error {
	*r = claimRow{}
	err := s.pool.QueryRow(ctx, sql, args...).Scan(r)
	for attempt := 1; attempt <= maxSerializationRetries && err != nil && isSerializationFailure(err); attempt++ {
		if serializationPause(ctx, attempt) != nil {
			return err
		}
		*r = claimRow{}
		err = s.pool.QueryRow(ctx, sql, args...).Scan(r)
	}
	return err
}

// claim returns the keystore.Claim that r reports.
func (r *claimRow) claim(tok int64) (keystore.Claim, error) {
	c := keystore.Claim{Fingerprint: r.fp}
	switch {
	case !r.acquired && r.remaining <= 0:
		// claimSQL wrote the ended row back: the token is fenced.
		return keystore.Claim{}, fmt.Errorf("pgstore: claim: the token was released before the claim arrived: %w", keystore.ErrLeaseLost)
	case r.fpNull:
		return keystore.Claim{}, errors.New("pgstore: claim: stored fingerprint is NULL")
	case r.acquired:
		c.Acquired, c.State, c.TookOver = true, keystore.InFlight, r.tookOver
	case !r.statusNull && r.rec != nil:
		c.State, c.Record = keystore.Completed, r.rec
	case !r.statusNull:
		c.State = keystore.Completed
		// The columns encoded again: Complete accepts only the encoding
		// exactly as record.Append writes it, so these are its bytes.
		c.Record = record.Append(nil, record.Record{StatusCode: int(r.status), Header: r.header, Body: r.body})
	case r.token == tok:
		// The caller's own claim, repeated.
		c.Acquired, c.State = true, keystore.InFlight
	default:
		c.State = keystore.InFlight
		c.LeaseRemaining = max(time.Duration(r.remaining)*time.Microsecond, time.Microsecond)
	}
	return c, nil
}
