package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// Execer runs a statement: a *pgx.Conn, a *pgxpool.Pool or a pgx.Tx.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Drop removes every object that a Store of this Config's Schema and Table
// creates (the table and its index, the claim function and its row
// type, the migrations and client-count tables, the token sequence of
// earlier versions), those that exist: for a test that made a store of
// its own, or to take a store out of service.
// Every record goes with it, so every retry that arrives afterwards runs
// its handler again; stop the services that use the store first. A name
// that New would refuse is an error, and nothing is dropped.
func Drop(ctx context.Context, db Execer, cfg Config) error {
	table := cfg.Table
	if table == "" {
		table = DefaultTable
	}
	n, err := newNames(cfg.Schema, table)
	if err != nil {
		return err
	}
	for _, q := range []string{
		"DROP FUNCTION IF EXISTS " + n.claimFn + "(text, bytea, bigint, bigint)",
		"DROP TYPE IF EXISTS " + n.claimRow,
		"DROP TABLE IF EXISTS " + n.table + " CASCADE",
		"DROP TABLE IF EXISTS " + n.versions,
		"DROP TABLE IF EXISTS " + n.clients,
		"DROP TABLE IF EXISTS " + n.shards,
		"DROP SEQUENCE IF EXISTS " + n.seq,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			return fmt.Errorf("pgstore: drop %s: %w", n.qualified, err)
		}
	}
	return nil
}
