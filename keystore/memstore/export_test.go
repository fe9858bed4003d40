package memstore

// The defaults of Config's zero fields, for the tests of package
// memstore_test.
const (
	DefaultMaxBytes     = defaultMaxBytes
	DefaultReserveBytes = defaultReserveBytes
	DefaultClientKeys   = defaultClientKeys
	DefaultClientWindow = defaultClientWindow
)
