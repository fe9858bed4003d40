package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/adminhttp"
	"github.com/jackc/pgx/v5"
)

var _ adminhttp.Admin = (*Store)(nil)

// entryColumns reads one row of the key table for adminhttp.Admin, with the
// time left until its expires_at by the database clock, in microseconds.
const entryColumns = `fingerprint, token, status, header, body, released,
    (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint`

// scanEntry reads entryColumns into an Entry.
func scanEntry(row pgx.Row) (adminhttp.Entry, error) {
	var (
		fpb, header, body []byte
		token, left       int64
		status            *int32
		released          bool
	)
	if err := row.Scan(&fpb, &token, &status, &header, &body, &released, &left); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return adminhttp.Entry{}, nil
		}
		return adminhttp.Entry{}, err
	}
	e := adminhttp.Entry{Token: keystore.Token(token)}
	copy(e.Fingerprint[:], fpb)
	remaining := time.Duration(left) * time.Microsecond
	switch {
	case released && token == 0:
		return adminhttp.Entry{}, nil // a fence (see releaseSQL): as good as absent
	case released:
		e.State = keystore.Released
	case status == nil:
		e.State, e.LeaseRemaining, e.LeaseRunOut = keystore.InFlight, remaining, left <= 0
	case left > 0:
		h, err := decodeHeader(header)
		if err != nil {
			return adminhttp.Entry{}, err
		}
		e.State, e.RetentionRemaining = keystore.Completed, remaining
		if len(body) == 0 {
			body = nil
		}
		e.Record = record.Append(nil, record.Record{StatusCode: int(*status), Header: h, Body: body})
	default:
		return adminhttp.Entry{}, nil // the retention has ended: as good as absent
	}
	return e, nil
}

// Inspect implements adminhttp.Admin: one SELECT.
func (s *Store) Inspect(ctx context.Context, key string) (adminhttp.Entry, error) {
	e, err := scanEntry(s.pool.QueryRow(ctx, `SELECT `+entryColumns+` FROM `+s.names.table+` WHERE key = $1::text`, key))
	if err != nil {
		return adminhttp.Entry{}, storeErr(ctx, "inspect", err)
	}
	return e, nil
}

// change locks key's row, reads it, and deletes it when del says so, in one
// transaction.
func (s *Store) change(ctx context.Context, op, key string, del func(adminhttp.Entry) error) (adminhttp.Entry, error) {
	var (
		e    adminhttp.Entry
		veto error
	)
	err := retrySerialization(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			e, err = scanEntry(tx.QueryRow(ctx, `SELECT `+entryColumns+` FROM `+s.names.table+` WHERE key = $1::text FOR UPDATE`, key))
			if err != nil {
				return err
			}
			if veto = del(e); veto != nil {
				return nil
			}
			_, err = tx.Exec(ctx, `DELETE FROM `+s.names.table+` WHERE key = $1::text`, key)
			return err
		})
	})
	if err != nil {
		return adminhttp.Entry{}, storeErr(ctx, op, err)
	}
	return e, veto
}

// Free implements adminhttp.Admin: the row, locked, read and deleted in one
// transaction.
func (s *Store) Free(ctx context.Context, key string, force bool) (adminhttp.Entry, error) {
	return s.change(ctx, "free", key, func(e adminhttp.Entry) error { return adminhttp.CanFree(e, force) })
}

// Forget implements adminhttp.Admin, as Free does.
func (s *Store) Forget(ctx context.Context, key string) (adminhttp.Entry, error) {
	return s.change(ctx, "forget", key, adminhttp.CanForget)
}

// Summarize implements adminhttp.Admin: a count over the whole table, and
// the first live row along the expiry index. Bytes are those of the stored
// fingerprints, tokens, headers and bodies.
func (s *Store) Summarize(ctx context.Context) (adminhttp.Summary, error) {
	var sum adminhttp.Summary
	err := s.pool.QueryRow(ctx, `
WITH clk AS MATERIALIZED (SELECT clock_timestamp() AS ts)
SELECT count(*) FILTER (WHERE status IS NULL AND NOT released),
       count(*) FILTER (WHERE status IS NULL AND NOT released AND expires_at <= clk.ts),
       count(*) FILTER (WHERE status IS NOT NULL AND expires_at > clk.ts),
       coalesce(sum(octet_length(fingerprint) + 8 + coalesce(octet_length(header), 0) + coalesce(octet_length(body), 0))
           FILTER (WHERE (status IS NULL AND NOT released) OR (status IS NOT NULL AND expires_at > clk.ts)), 0)
FROM `+s.names.table+`, clk`).Scan(&sum.InFlight, &sum.LeaseRunOut, &sum.Completed, &sum.Bytes)
	if err != nil {
		return adminhttp.Summary{}, storeErr(ctx, "summarize", err)
	}
	var (
		held bool
		left int64
	)
	err = s.pool.QueryRow(ctx, `
WITH clk AS MATERIALIZED (SELECT clock_timestamp() AS ts)
SELECT key, status IS NULL, (extract(epoch FROM expires_at - clk.ts) * 1000000)::bigint
FROM `+s.names.table+`, clk
WHERE (status IS NULL AND NOT released) OR (status IS NOT NULL AND expires_at > clk.ts)
ORDER BY expires_at LIMIT 1`).Scan(&sum.Oldest, &held, &left)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return sum, nil
	case err != nil:
		return adminhttp.Summary{}, storeErr(ctx, "summarize", err)
	}
	sum.OldestState, sum.OldestRemaining = keystore.Completed, time.Duration(left)*time.Microsecond
	if held {
		sum.OldestState = keystore.InFlight
	}
	return sum, nil
}
