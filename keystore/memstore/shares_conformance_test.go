package memstore_test

import (
	"testing"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// The conformance suite on a store small enough for a client's share to
// bite within a rule: 64 keys, a share and a headroom of 16, so a client
// that has filled three quarters of the store alone is refused new keys
// past its share.
func TestConformanceShares(t *testing.T) {
	keystoretest.Run(t, func(t *testing.T) keystore.Store { return memstore.New(memstore.Config{MaxEntries: 64}) })
}
