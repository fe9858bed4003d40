package memstore

import (
	"log/slog"
	"time"
)

// The defaults of Config's zero fields, each stated on its field.
const (
	defaultMaxEntries = 100_000
	defaultMaxBytes   = 128 << 20
	// defaultReserveBytes covers the middleware's default MaxRecordBytes
	// (1 MiB), which bounds the whole encoded record (status, headers and
	// body: the length of its bytes), with 8 KiB to spare.
	defaultReserveBytes = 1<<20 + 8<<10
	// defaultClientKeys and defaultClientWindow hold each client, under
	// contention, to 64 new keys a minute (see Config.ClientKeys; fewer in
	// a store of under 4,096 keys): the default headroom (25,000 keys)
	// then lasts about 48 minutes against 8 source addresses that flood
	// it, and a newcomer's first 64 keys go in at once.
	defaultClientKeys   = 64
	defaultClientWindow = time.Minute
	// defaultEvictAfter is the floor under which a full store never
	// evicts a completed record (see Config.EvictAfter).
	defaultEvictAfter = time.Hour
)

// Config holds a Store's limits. Zero fields mean the defaults.
type Config struct {
	// MaxEntries bounds the number of keys held. Default 100,000.
	MaxEntries int
	// MaxBytes bounds the bytes of keys and records held, approximately
	// (each entry is charged a fixed overhead too), reservations of the
	// claims in flight included. Default 128 MiB.
	MaxBytes int64
	// ReserveBytes is charged for each claim in flight that does not say
	// how large its record may be (keystore.ClaimArgs.RecordBytes zero), as
	// room for its record: see "Bounded memory" above. Default
	// 1 MiB + 8 KiB (the middleware's default MaxRecordBytes with room to
	// spare), or MaxBytes/16 when that is smaller. Negative
	// means no reservation at all, whatever a claim asks for (a record is
	// charged only at Complete, which may then refuse it).
	ReserveBytes int64
	// ClientKeys bounds the new keys one client (keystore.ClaimArgs.Client;
	// the middleware names it from its Config.Client) acquires under
	// contention, in a window of ClientWindow that starts with its first
	// counted key: past it, a Claim of a new key for the client fails with
	// a *keystore.FullError whose Client is set and whose RetryAfter is
	// the rest of the window, while the others still claim. Only a Claim
	// that acquires a key for which the store held no entry counts;
	// replays, keys in flight, the holder's repeated Claim, expired leases
	// taken over and released keys claimed again never count, and are
	// never refused. The bound bites only under contention (see "Clients
	// under contention" above): a Claim made while the store has more free
	// than its headroom (a quarter of MaxEntries and of MaxBytes) is
	// neither counted nor refused, so a legitimate sender on an idle store
	// is never refused. Claims without a client are bounded by MaxEntries
	// and MaxBytes alone. Default 64, or MaxEntries/64 (at
	// least 1) when that is smaller; negative means no bound.
	ClientKeys int
	// ClientWindow is the window of ClientKeys. Default one minute.
	ClientWindow time.Duration
	// EvictAfter is the floor of eviction: when the store is full, and
	// dropping what has expired or was released does not make room, it
	// evicts completed records older than EvictAfter (from their
	// Complete), oldest first, as many as the new key or record needs,
	// before their retention ends. A retry of an evicted record's request
	// runs its handler again, so set it over the time within which your
	// senders retry. Default one hour; negative means never: a
	// full store then refuses new keys until records reach the end of
	// their retention. Stats.Evicted counts the evictions, and Logger
	// logs them.
	EvictAfter time.Duration
	// Logger, if set, receives a warning when records are evicted: at the
	// first eviction, then at most once a minute with those since.
	Logger *slog.Logger
}

// floor returns the eviction floor, and whether eviction is on.
func (s *Store) floor() (time.Duration, bool) {
	switch f := s.cfg.EvictAfter; {
	case f < 0:
		return 0, false
	case f == 0:
		return defaultEvictAfter, true
	default:
		return f, true
	}
}

func (s *Store) limits() (n int, b int64) {
	n, b = s.cfg.MaxEntries, s.cfg.MaxBytes
	if n <= 0 {
		n = defaultMaxEntries
	}
	if b <= 0 {
		b = defaultMaxBytes
	}
	return n, b
}

// headroom returns the free room under which the store is contended: a
// quarter of its limits.
func (s *Store) headroom() (n int, b int64) {
	maxN, maxB := s.limits()
	return max(1, maxN/4), max(1, maxB/4)
}

// clientBound returns the bound of each client under contention; zero
// keys: none.
func (s *Store) clientBound() (keys int, window time.Duration) {
	keys, window = s.cfg.ClientKeys, s.cfg.ClientWindow
	switch {
	case keys < 0:
		return 0, 0
	case keys == 0:
		maxN, _ := s.limits()
		keys = max(1, min(defaultClientKeys, maxN/64))
	}
	if window <= 0 {
		window = defaultClientWindow
	}
	return keys, window
}

// reserve returns the bytes charged for a claim's record while it is in
// flight.
func (s *Store) reserve() int64 {
	r := s.cfg.ReserveBytes
	switch {
	case r < 0:
		return 0
	case r == 0:
		_, b := s.limits()
		return min(defaultReserveBytes, b/16)
	}
	return r
}
