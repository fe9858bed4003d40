package memstore

// Default limits, used where Config leaves a field zero.
const (
	DefaultMaxEntries = 100_000
	DefaultMaxBytes   = 128 << 20
	// DefaultReserveBytes covers the middleware's default MaxRecordBytes
	// (1 MiB), which bounds the whole encoded record (status, headers and
	// body: keystore.RecordLen), with 8 KiB to spare.
	DefaultReserveBytes = 1<<20 + 8<<10
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
	// MaxClientEntries and MaxClientBytes bound what one client holds: the
	// keys, and the bytes (reservations included), of the claims made for
	// that client (keystore.ClaimArgs.Client; the middleware names it from
	// its Config.Client). A client past its share
	// is refused with a *keystore.FullError whose Client is set, and the
	// others still claim: one client's flood cannot fill the store. Claims
	// without a client are bounded by MaxEntries and MaxBytes alone.
	// Default a quarter of MaxEntries and of MaxBytes; negative means no
	// share.
	MaxClientEntries int
	MaxClientBytes   int64
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
