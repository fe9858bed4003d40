package redisstore

import (
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
)

// Completed entries written before the completing token was stored ('c' |
// fingerprint | record) are still replayed.
func TestParseLegacyCompletedEntry(t *testing.T) {
	fp := keystore.Fingerprint{7}
	rec := record.Record{StatusCode: 201, Header: http.Header{"A": {"b"}}, Body: []byte("legacy")}
	for _, v := range []string{
		"c" + string(fp[:]) + string(record.Append(nil, rec)),
		"d" + string(fp[:]) + "\x00\x00\x00\x00\x00\x00\x00\x09" + string(record.Append(nil, rec)),
	} {
		c, ok := parseClaim(v)
		if !ok || c.State != keystore.Completed || c.Fingerprint != fp || testkit.Decoded(c.Record).StatusCode != 201 || string(testkit.Decoded(c.Record).Body) != "legacy" {
			t.Errorf("parseClaim(%.1q…) = %+v, %v; want the completed record", v, c, ok)
		}
	}
}
