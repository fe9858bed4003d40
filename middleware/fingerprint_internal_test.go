package middleware

import (
	"crypto/sha256"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFingerprintIsOneDigest checks that the fingerprint is the SHA-256 of
// one byte string, whichever way it is hashed: from the stack (small
// requests) or streamed into a pooled hash (large ones), on both sides of
// the boundary. Fingerprints outlive a deploy in the stores, so a change of
// either way would turn every retry across it into a mismatch.
func TestFingerprintIsOneDigest(t *testing.T) {
	m := &Middleware{}
	// The second query alone fills more than the stack buffer.
	for _, query := range []string{"dry-run=1", "q=" + strings.Repeat("x", 600)} {
		for _, n := range []int{0, 1, 400, 460, 470, 480, 511, 512, 513, 4096, 1 << 16} {
			body := []byte(strings.Repeat("x", n))
			r := httptest.NewRequest("POST", "/features?"+query, nil)
			got := m.fingerprint(r, identity{method: "POST", path: "/features"}, body)
			want := sha256.Sum256([]byte("geoidem fingerprint v1\x00POST\x00/features\x00" + query + "\x00" + string(body)))
			if got != want {
				t.Errorf("query of %d bytes, body of %d bytes: fingerprint %x, want %x", len(query), n, got, want)
			}
		}
	}
}
