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
	// ReserveBytes is charged for each claim in flight, as room for its
	// record: see "Bounded memory" above. Default DefaultReserveBytes, or
	// MaxBytes/16 when that is smaller; negative means no reservation (a
	// record is charged only at Complete, which may then refuse it).
	ReserveBytes int64
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
