package redisstore

import (
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/keystore"
)

// Completed entries written before the completing token was stored ('c' |
// fingerprint | record) are still replayed.
func TestParseLegacyCompletedEntry(t *testing.T) {
	fp := keystore.Fingerprint{7}
	rec := keystore.Record{StatusCode: 201, Header: http.Header{"A": {"b"}}, Body: []byte("legacy")}
	for _, v := range []string{
		"c" + string(fp[:]) + string(keystore.AppendRecord(nil, rec)),
		"d" + string(fp[:]) + "\x00\x00\x00\x00\x00\x00\x00\x09" + string(keystore.AppendRecord(nil, rec)),
	} {
		c, ok := parseClaim(v)
		if !ok || c.State != keystore.Completed || c.Fingerprint != fp || c.Record.StatusCode != 201 || string(c.Record.Body) != "legacy" {
			t.Errorf("parseClaim(%.1q…) = %+v, %v; want the completed record", v, c, ok)
		}
	}
}
