package pgstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxPruneBatches bounds the statements one Prune call runs, so that a table
// filling faster than it is pruned cannot keep a call going forever; the next
// call carries on.
const maxPruneBatches = 1000

// Prune deletes rows whose lease or retention ended more than a minute ago
// (and, with Config.ClientKeys, the counts whose window did),
// by the database clock, and returns how many it deleted. It deletes in
// batches of Config.PruneBatch rows, each its own short statement walking the
// expiry index, until a batch comes back short (or after 1000 batches), and
// skips rows locked by other transactions, so it neither holds long locks nor
// waits for a concurrent janitor. On an error it returns the rows deleted so
// far.
//
// Claim already ignores expired rows: pruning only reclaims space.
func (s *Store) Prune(ctx context.Context) (int, error) {
	grace, _ := micros(abandonedGrace)
	total := 0
	for range maxPruneBatches {
		if err := ctx.Err(); err != nil {
			return total, storeErr(ctx, "prune", err)
		}
		var tag pgconn.CommandTag
		err := retrySerialization(ctx, func() (err error) {
			tag, err = s.pool.Exec(ctx, s.sql.prune, s.batch, grace)
			return err
		})
		if err != nil {
			return total, storeErr(ctx, "prune", err)
		}
		n := int(tag.RowsAffected())
		total += n
		if n < s.batch {
			break
		}
	}
	if s.clientKeys > 0 {
		// The counts whose window ended: a row per client, few.
		for _, sql := range []string{s.sql.pruneShards, s.sql.pruneClients} {
			if err := retrySerialization(ctx, func() error {
				_, err := s.pool.Exec(ctx, sql, grace)
				return err
			}); err != nil {
				return total, storeErr(ctx, "prune", err)
			}
		}
	}
	return total, nil
}

// janitor prunes every interval until ctx is canceled.
func (s *Store) janitor(ctx context.Context, every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.Prune(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.log.LogAttrs(ctx, slog.LevelWarn, "pgstore: pruning expired keys failed", slog.String("table", s.names.qualified), slog.Int("deleted", n), slog.Any("error", err))
		case n > 0:
			s.log.LogAttrs(ctx, slog.LevelDebug, "pgstore: pruned expired keys", slog.String("table", s.names.qualified), slog.Int("deleted", n))
		}
	}
}
