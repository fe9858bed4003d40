package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/newest"
)

// postgisFeatures keeps features in a PostGIS table. Its upsert runs in
// the same transaction as the key's completion (pgstore.Store.InTx): a
// crash between the write and the record can neither lose the answer nor
// apply the write twice. The writes column counts how often a feature was
// written, in that transaction: only committed writes count, so it shows
// whether any delivery took effect twice.
//
// Each feature is one conditional upsert: ON CONFLICT (id) DO UPDATE …
// WHERE the stored observation is superseded (newest.PostgresCondition on
// the observed_at and feature columns), RETURNING a row only when it wrote
// (newest.Refused says why not). The row is locked and the condition
// evaluated on its latest committed version, so concurrent updates of one
// id keep the newest.
//
// The geometry column is a plain geometry with a CHECK on SRID 4326, so it
// takes 2D, 3D and mixed collections alike (geometry(Geometry, 4326)
// refuses Z); each geometry arrives as EWKB, encoded from the validator's
// go-geom value, never as GeoJSON text to parse again. The feature itself
// is kept as bytea, exactly the bytes received: jsonb would refuse the
// escape \u0000 and would reorder members and respell numbers.
type postgisFeatures struct {
	keys  *pgstore.Store
	pool  *pgxpool.Pool
	table string // quoted
}

func (p *postgisFeatures) migrate(ctx context.Context) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	// Replicas starting together must not race to create the extension.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7946)`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS postgis`); err != nil {
		return fmt.Errorf("creating the postgis extension (is postgresql-15-postgis-3 installed?): %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+p.table+` (
		id         text PRIMARY KEY,
		geom       geometry CHECK (ST_SRID(geom) = 4326),
		feature    bytea NOT NULL,
		writes     integer NOT NULL DEFAULT 1,
		updated_at timestamptz NOT NULL DEFAULT now(),
		observed_at timestamptz
	)`); err != nil {
		return err
	}
	// A table of an earlier version has no observed_at: its features keep
	// NULL (no time), which any update supersedes.
	if _, err := tx.Exec(ctx, `ALTER TABLE `+p.table+` ADD COLUMN IF NOT EXISTS observed_at timestamptz`); err != nil {
		return err
	}
	// A table of an earlier version: geometry(Geometry, 4326) and jsonb.
	var featureType string
	if err := tx.QueryRow(ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = $1::regclass AND attname = 'feature'`, p.table).Scan(&featureType); err != nil {
		return err
	}
	if featureType == "jsonb" {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+p.table+`
			ALTER COLUMN geom TYPE geometry USING geom::geometry,
			ADD CHECK (ST_SRID(geom) = 4326),
			ALTER COLUMN feature TYPE bytea USING convert_to(feature::text, 'UTF8')`); err != nil {
			return fmt.Errorf("migrating %s to geometry and bytea columns: %w", p.table, err)
		}
	}
	return tx.Commit(ctx)
}

func (p *postgisFeatures) Upsert(ctx context.Context, hold *keystore.Hold, fs []Feature, answer func([]newest.Verdict) Answer) (Answer, error) {
	upsert := `INSERT INTO ` + p.table + ` AS stored (id, geom, feature, observed_at)
		VALUES ($1, ST_SetSRID(ST_GeomFromEWKB($2::bytea), 4326), $3::bytea, $4)
		ON CONFLICT (id) DO UPDATE SET geom = EXCLUDED.geom, feature = EXCLUDED.feature,
			observed_at = EXCLUDED.observed_at, writes = stored.writes + 1, updated_at = now()
		WHERE ` + newest.PostgresCondition("stored", "observed_at", "feature") + `
		RETURNING true`
	rec, err := p.keys.InTx(ctx, hold, func(tx pgx.Tx) (pgstore.Record, error) {
		var b pgx.Batch
		verdicts := make([]newest.Verdict, len(fs))
		for i, f := range fs {
			var wkb []byte // SQL NULL for a null geometry
			if f.Geometry != nil {
				var err error
				if wkb, err = ewkbOf(f.Geometry); err != nil {
					return pgstore.Record{}, &RefusedError{Index: i, Pointer: "/geometry", Detail: err.Error(), Err: err}
				}
			}
			var observed any // SQL NULL: no time
			if !f.Observed.IsZero() {
				observed = f.Observed
			}
			b.Queue(upsert, f.ID, wkb, f.Raw, observed).QueryRow(func(row pgx.Row) error {
				var wrote bool
				switch err := row.Scan(&wrote); {
				case err == nil:
					verdicts[i] = newest.Replace
				case errors.Is(err, pgx.ErrNoRows):
					verdicts[i] = newest.Refused(f.Observation()) // what is stored stays
				default:
					return refusedByPostgres(i, err)
				}
				return nil
			})
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return pgstore.Record{}, err
		}
		return pgstore.Record(answer(verdicts)), nil
	})
	return Answer(rec), err
}

func (p *postgisFeatures) Get(ctx context.Context, id string) ([]byte, bool, error) {
	var f []byte
	err := p.pool.QueryRow(ctx, `SELECT feature FROM `+p.table+` WHERE id = $1`, id).Scan(&f)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	return f, err == nil, err
}

// refusedByPostgres returns the error of feature i's own statement: a
// *RefusedError when it is the feature's own fault, a *ConflictError when
// it is the state of other rows', err as it is otherwise (transient,
// whatever it is).
//
// The feature's own fault, which no retry fixes, is a value of its own
// that the table can never take:
//
//   - SQLSTATE class 22, data exception (a string too long, 22001; an
//     invalid value, 22P02; a Z on a 2D column, 22023);
//   - class 23, integrity constraint violation, of its own values alone
//     (a CHECK, 23514; a NOT NULL, 23502);
//   - class 54, program limit exceeded (a value too large, 54000);
//   - a geometry PostGIS refuses (XX000 raised from its lwgeom code, such
//     as "Polygon must have at least four points in each ring").
//
// A conflict with other rows, which another write can lift, is the rest
// of class 23: a foreign key to a row not there yet (23503: deliveries
// arrive out of order), a unique index (23505) or an exclusion constraint
// (23P01) another row holds, a restriction (23001).
//
// Anything else is not known to be the feature's fault, and unknown means
// transient: a trigger's RAISE EXCEPTION (P0001), a missing table (42P01,
// a deployment's bug), a lost connection, a deadlock. Answered 503 and
// released, the sender retries and, if the fault stays, dead-letters the
// event as retryable: an operator re-drives it once it is fixed. A 422
// would be recorded, and the sender would give up a valid event for good.
func refusedByPostgres(i int, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	class := pgErr.Code[:min(2, len(pgErr.Code))]
	switch {
	case pgErr.Code == "XX000" && strings.HasPrefix(pgErr.File, "lwgeom"):
		return &RefusedError{Index: i, Pointer: "/geometry", Detail: "PostGIS refused the geometry: " + pgErr.Message, Err: err}
	case pgErr.Code == "23503" || pgErr.Code == "23505" || pgErr.Code == "23P01" || pgErr.Code == "23001":
		return &ConflictError{Index: i, Detail: "the database refused the feature for the state of other rows (SQLSTATE " + pgErr.Code + "): " + pgErr.Message, Err: err}
	case class == "22" || class == "23" || class == "54":
		return &RefusedError{Index: i, Detail: "the database refused the feature (SQLSTATE " + pgErr.Code + "): " + pgErr.Message, Err: err}
	}
	return err
}
