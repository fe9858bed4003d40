package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema change, numbered by its file name
// (0001_keys.sql is version 1).
type migration struct {
	version int
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	paths, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, p := range paths {
		num, _, ok := strings.Cut(path.Base(p), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("pgstore: migration %s: name must start with a positive number and '_'", p)
		}
		b, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("pgstore: migrations are not numbered 1, 2, …: found version %d at position %d", m.version, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this package's migrations produce.
const SchemaVersion = 8

// Migrate brings the store's schema up to SchemaVersion, applying each
// embedded migration that the table's migration record lacks, all in one
// transaction. It is safe to run from several processes at once: they
// serialise on a transaction-scoped advisory lock derived from the table's
// name, and each applies only what the one before it left undone. It fails,
// changing nothing, if the database holds a newer schema than this package
// knows.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	// READ COMMITTED whatever the sessions' default: each statement after the
	// lock must see what the replica that held it before committed, which a
	// snapshot taken by the lock statement itself (REPEATABLE READ,
	// SERIALIZABLE) would not.
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, s.lockKey); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.names.expand(versionsSQL)); err != nil {
			return err
		}
		var current int
		if err := tx.QueryRow(ctx, s.names.expand(currentSQL)).Scan(&current); err != nil {
			return err
		}
		if current > len(ms) {
			return fmt.Errorf("schema of %s is at version %d, newer than this package's %d", s.names.qualified, current, len(ms))
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, s.names.expand(m.sql)); err != nil {
				return fmt.Errorf("migration %d: %w", m.version, err)
			}
			if _, err := tx.Exec(ctx, s.names.expand(recordSQL), m.version); err != nil {
				return fmt.Errorf("migration %d: %w", m.version, err)
			}
		}
		return nil
	})
	if err != nil {
		return storeErr(ctx, "migrate", err)
	}
	return nil
}
