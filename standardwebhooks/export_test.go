package standardwebhooks

import (
	"net/http"
	"strconv"
	"time"
)

// The limits and the secret prefix, for the tests of package
// standardwebhooks_test.
const (
	MaxSignatures       = maxSignatures
	MaxIDLen            = maxIDLen
	MinSigningSecretLen = minSigningSecretLen
	SecretPrefix        = secretPrefix
)

// The constructors from raw key bytes, behind the parsers.
var (
	NewSecret     = newSecret
	NewSigningKey = newSigningKey
	NewPublicKey  = newPublicKey
)

// Sign returns the v1 signature of an attempt at ts under secret, as a
// Signer writes it, without checking id: for tests that build requests
// with any id and timestamp.
func Sign(secret Secret, id string, ts time.Time, body []byte) string {
	return signatureVersion + "," + mac(secret, id, strconv.FormatInt(ts.Unix(), 10), body)
}

// SignAsymmetric is Sign's v1a counterpart; the zero SigningKey signs
// nothing ("").
func SignAsymmetric(key SigningKey, id string, ts time.Time, body []byte) string {
	if key.isZero() {
		return ""
	}
	return signatureVersionAsymmetric + "," + edSign(key, id, strconv.FormatInt(ts.Unix(), 10), body)
}

// CheckHeaders runs the checks of Precheck's on h alone, without the
// query's.
func (v *Verifier) CheckHeaders(h http.Header) error {
	_, err := v.checkHeaders(h)
	return err
}
