package memstore

// The defaults of Config's zero fields, for the tests of package
// memstore_test.
const (
	DefaultMaxBytes     = defaultMaxBytes
	DefaultReserveBytes = defaultReserveBytes
	DefaultClientKeys   = defaultClientKeys
	DefaultClientWindow = defaultClientWindow
)

// ReadLock holds s's lock shared, as a Claim of a live key does, until the
// returned function is called.
func ReadLock(s *Store) (unlock func()) {
	s.mu.RLock()
	return s.mu.RUnlock
}
