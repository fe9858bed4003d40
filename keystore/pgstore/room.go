package pgstore

import (
	"context"
	"time"

	"github.com/geoidem/geoidem/internal/storeroom"
)

// A Store with Config.MaxKeys samples how many rows its table holds, at
// most once every roomPoll, started by the first Claim that finds the
// last sample older, in the background (storeroom.Room: no Claim waits
// for it or scans anything). The count is the server's statistics'
// (pg_stat_user_tables.n_live_tup), which each session reports after its
// transactions, at most once a second, and within about ten seconds when
// it goes idle: it trails the table by that much. With it, roomSQL reads
// the table's earliest expiry along the expiry index: a row is deleted
// by the janitor once it has been expired for the grace, which is when
// a refusal's RetryAfter says room frees up, plus one janitor interval.
const (
	roomPoll          = time.Second
	roomSampleTimeout = 5 * time.Second
)

// roomSQL: $1 the table's name (regclass). Returns the live rows the
// statistics count and the microseconds until the earliest expiry, NULL
// when the table is empty.
const roomSQL = `
SELECT coalesce((SELECT n_live_tup FROM pg_stat_user_tables WHERE relid = $1::regclass), 0),
       (extract(epoch FROM (SELECT min(expires_at) FROM {{table}}) - clock_timestamp()) * 1000000)::bigint`

// existsSQL: $1 key. Whether the key has a row, live or not.
const existsSQL = `SELECT EXISTS (SELECT FROM {{table}} WHERE key = $1::text)`

// room is Config.MaxKeys's state.
type room = storeroom.Room

// initRoom sets the room up for a bound of bound rows, the janitor
// running every prune, and takes the first sample.
func (s *Store) initRoom(bound int64, prune time.Duration) {
	r := &s.room
	r.Every, r.Timeout = roomPoll, roomSampleTimeout
	r.Sample = func(ctx context.Context) (bool, time.Duration, error) {
		var rows int64
		var next *int64
		if err := s.pool.QueryRow(ctx, s.sql.room, s.names.table).Scan(&rows, &next); err != nil {
			return false, 0, err
		}
		if rows < bound {
			return false, 0, nil
		}
		wait := prune
		if next != nil {
			wait += max(time.Duration(*next)*time.Microsecond+abandonedGrace, 0)
		}
		return true, wait, nil
	}
	r.SampleNow(context.Background())
}

// full returns the refusal of a Claim of key, nil when the table has
// room or key has a row: a Claim that finds a row (a replay, a key in
// flight, one to take over) adds none, and is never refused for the bound.
func (s *Store) full(ctx context.Context, key string) error {
	fe := s.room.Full()
	if fe == nil {
		return nil
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, s.sql.exists, key).Scan(&exists); err != nil {
		return storeErr(ctx, "claim", err)
	}
	if exists {
		return nil
	}
	return fe
}
