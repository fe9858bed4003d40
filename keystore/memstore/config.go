package memstore

import (
	"log/slog"
	"time"
)

// Default limits, used where Config leaves a field zero.
const (
	DefaultMaxEntries = 100_000
	DefaultMaxBytes   = 128 << 20
	// DefaultReserveBytes covers the middleware's default MaxRecordBytes
	// (1 MiB), which bounds the whole encoded record (status, headers and
	// body: the length of its bytes), with 8 KiB to spare.
	DefaultReserveBytes = 1<<20 + 8<<10
	// DefaultClientRate and DefaultClientBurst hold each client, under
	// contention, to 64 new keys at once and then one a second: the
	// default headroom (25,000 keys) then lasts about 51 minutes against 8
	// source addresses that flood it, and a newcomer's first 64 keys go in
	// at once.
	DefaultClientRate  = 1.0
	DefaultClientBurst = 64
	// DefaultEvictAfter is the floor under which a full store never
	// evicts a completed record (see Config.EvictAfter).
	DefaultEvictAfter = time.Hour
)

// Config holds a Store's limits. Zero fields mean the defaults.
type Config struct {
	// MaxEntries bounds the number of keys held. Default DefaultMaxEntries.
	MaxEntries int
	// MaxBytes bounds the bytes of keys and records held, approximately
	// (each entry is charged a fixed overhead too), reservations of the
	// claims in flight included. Default DefaultMaxBytes.
	MaxBytes int64
	// ReserveBytes is charged for each claim in flight that does not say
	// how large its record may be (keystore.ClaimArgs.RecordBytes zero), as
	// room for its record: see "Bounded memory" above. Default
	// DefaultReserveBytes, or MaxBytes/16 when that is smaller. Negative
	// means no reservation at all, whatever a claim asks for (a record is
	// charged only at Complete, which may then refuse it).
	ReserveBytes int64
	// MaxClientEntries and MaxClientBytes are one client's share: the keys,
	// and the bytes (reservations included), of the claims made for that
	// client (keystore.ClaimArgs.Client; the middleware names it from its
	// Config.Client). A share bites only under contention (see "Shares
	// under contention" above): a client may hold more while the store has
	// more than the headroom free, and once it has not, a client past its
	// share is refused new keys with a *keystore.FullError whose Client is
	// set, while the others still claim. Claims without a client are
	// bounded by MaxEntries and MaxBytes alone. Default a quarter of
	// MaxEntries and of MaxBytes; negative means no share.
	MaxClientEntries int
	MaxClientBytes   int64
	// HeadroomEntries and HeadroomBytes are the room that claims for
	// clients past their share never take: the store is contended once a
	// claim would leave less free than either. Default one share
	// (MaxClientEntries, MaxClientBytes), or a quarter of MaxEntries and
	// of MaxBytes where there is no share; negative means none (contended
	// only when full). A headroom of all the store (MaxEntries, MaxBytes)
	// makes it contended from the first key: every client is held to its
	// share and its rate at all times.
	HeadroomEntries int
	HeadroomBytes   int64
	// ClientRate is how many new keys a second a client acquires under
	// contention, after a burst of ClientBurst: golang.org/x/time/rate's
	// token bucket, one per client, full when the store becomes
	// contended. A client past its rate is refused with a
	// *keystore.FullError whose Client is set and whose RetryAfter says
	// when its next key is due. Replays, keys in flight, and released keys
	// claimed again never count. Default DefaultClientRate; negative means
	// no rate.
	ClientRate float64
	// ClientBurst is the size of the bucket. Default DefaultClientBurst,
	// or one sixteenth of a share when that is smaller.
	ClientBurst int
	// EvictAfter is the floor of eviction: when the store is full, and
	// dropping what has expired or was released does not make room, it
	// evicts completed records older than EvictAfter (from their
	// Complete), oldest first, as many as the new key or record needs,
	// before their retention ends. A retry of an evicted record's request
	// runs its handler again, so set it over the time within which your
	// senders retry. Default DefaultEvictAfter; negative means never: a
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
		return DefaultEvictAfter, true
	default:
		return f, true
	}
}

func (s *Store) limits() (n int, b int64) {
	n, b = s.cfg.MaxEntries, s.cfg.MaxBytes
	if n <= 0 {
		n = DefaultMaxEntries
	}
	if b <= 0 {
		b = DefaultMaxBytes
	}
	return n, b
}

// clientLimits returns the share of one client; zero: no bound.
func (s *Store) clientLimits() (n int, b int64) {
	maxN, maxB := s.limits()
	n, b = s.cfg.MaxClientEntries, s.cfg.MaxClientBytes
	switch {
	case n < 0:
		n = 0
	case n == 0:
		n = max(1, maxN/4)
	}
	switch {
	case b < 0:
		b = 0
	case b == 0:
		b = max(1, maxB/4)
	}
	return n, b
}

// headroom returns the room that claims of clients past their share never
// take.
func (s *Store) headroom() (n int, b int64) {
	maxN, maxB := s.limits()
	shareN, shareB := s.clientLimits()
	n, b = s.cfg.HeadroomEntries, s.cfg.HeadroomBytes
	switch {
	case n < 0:
		n = 0
	case n == 0 && shareN > 0:
		n = shareN
	case n == 0:
		n = max(1, maxN/4)
	}
	switch {
	case b < 0:
		b = 0
	case b == 0 && shareB > 0:
		b = shareB
	case b == 0:
		b = max(1, maxB/4)
	}
	return min(n, maxN), min(b, maxB)
}

// clientRate returns a client's rate and burst under contention; a zero
// rate: none.
func (s *Store) clientRate() (rate float64, burst int) {
	rate, burst = s.cfg.ClientRate, s.cfg.ClientBurst
	switch {
	case rate < 0:
		return 0, 0
	case rate == 0:
		rate = DefaultClientRate
	}
	if burst <= 0 {
		burst = DefaultClientBurst
		if shareN, _ := s.clientLimits(); shareN > 0 {
			burst = max(1, min(burst, shareN/16))
		}
	}
	return rate, burst
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
		return min(DefaultReserveBytes, b/16)
	}
	return r
}
