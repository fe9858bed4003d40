package standardwebhooks

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// checkHeaders runs every check of Verify that needs no body (see
// Precheck) and returns what the headers say. It returns the error Verify
// would return, wrapping the same sentinel, for a request it refuses.
func (v *Verifier) checkHeaders(h http.Header) (message, error) {
	ids, stamps, sigs := nonEmpty(h.Values(HeaderID)), nonEmpty(h.Values(HeaderTimestamp)), nonEmpty(h.Values(HeaderSignature))
	var missing []string
	for _, f := range []struct {
		name string
		n    int
	}{{HeaderID, len(ids)}, {HeaderTimestamp, len(stamps)}, {HeaderSignature, len(sigs)}} {
		if f.n == 0 {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return message{}, failf(ErrMissingHeaders, "The request carries no %s header; Standard Webhooks requests carry webhook-id, webhook-timestamp and webhook-signature.", strings.Join(missing, " or "))
	}
	if len(ids) > 1 || len(stamps) > 1 {
		return message{}, failf(ErrMalformedHeaders, "The request carries webhook-id or webhook-timestamp more than once.")
	}
	m := message{id: ids[0], timestamp: stamps[0]}
	if err := checkReceivedID(m.id); err != nil {
		return message{}, err
	}
	tokens := signatureTokens(sigs, maxSignatures+1)
	if len(tokens) > maxSignatures {
		return message{}, failf(ErrMalformedHeaders, "The webhook-signature carries more than %d signatures.", maxSignatures)
	}
	secs, ok := parseUnix(m.timestamp)
	if !ok {
		return message{}, failf(ErrMalformedHeaders, "The webhook-timestamp is not a Unix time in whole seconds.")
	}
	now := v.now()
	switch age := now.Sub(time.Unix(secs, 0)); {
	case age > v.tolerance:
		return message{}, failf(ErrTimestampOutOfTolerance, "The webhook-timestamp is %s in the past; at most %s is accepted. Sign every attempt afresh.", age.Truncate(time.Second), v.tolerance)
	case age < -v.tolerance:
		// Ahead, which the receiver's clock will catch up with: refused
		// only once the signature verifies (authenticate), since only an
		// authentic request is worth being told when to come back.
		m.ahead = -age - v.tolerance
	}
	for _, tok := range tokens {
		version, text, ok := strings.Cut(tok, ",")
		switch {
		case !ok:
		case version == signatureVersion && len(v.secrets) > 0:
			if _, ok := decode(text, sha256.Size); ok {
				m.sigs = append(m.sigs, signature{version: version, text: text})
			}
		case version == signatureVersionAsymmetric && len(v.publics) > 0:
			if raw, ok := decode(text, ed25519.SignatureSize); ok {
				m.sigs = append(m.sigs, signature{version: version, raw: raw})
			}
		}
	}
	if len(m.sigs) == 0 {
		return message{}, failf(ErrInvalidSignature, "The webhook-signature carries no well-formed %s signature.", v.versions)
	}
	return m, nil
}

// signatureTokens returns the signatures of the webhook-signature fields,
// at most limit of them: the tokens separated by spaces or tabs, the white
// space of HTTP. No other character separates them (strings.Fields would
// also split at U+00A0 and U+0085, which a field may carry), so the
// signatures counted are exactly the signatures checked, and a field of
// any size costs one pass.
func signatureTokens(fields []string, limit int) []string {
	var tokens []string
	for _, f := range fields {
		for len(f) > 0 && len(tokens) < limit {
			f = strings.TrimLeft(f, " \t")
			if f == "" {
				break
			}
			end := strings.IndexAny(f, " \t")
			if end < 0 {
				end = len(f)
			}
			tokens = append(tokens, f[:end])
			f = f[end:]
		}
	}
	return tokens
}

// checkReceivedID checks a received webhook-id: at most maxIDLen bytes of
// printable ASCII. That is what the geoidem middleware takes as a key, so
// an id it would refuse is refused here, before the body is read. Unlike
// [Signer.SignRequest], a Verifier takes full stops and surrounding spaces:
// other senders may sign them. The error never contains the id.
func checkReceivedID(id string) error {
	if len(id) > maxIDLen {
		return failf(ErrMalformedHeaders, "The webhook-id is %d bytes long; at most %d are accepted.", len(id), maxIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c > 0x7e {
			return failf(ErrMalformedHeaders, "The webhook-id has byte 0x%02x, not printable ASCII, at offset %d.", c, i)
		}
	}
	return nil
}

// decode returns the n bytes that text is the standard, padded base64
// encoding of, in its canonical form, and whether it is one.
func decode(text string, n int) ([]byte, bool) {
	if len(text) != base64.StdEncoding.EncodedLen(n) {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(text)
	return b, err == nil && len(b) == n
}

// nonEmpty returns the values that are not empty or blank.
func nonEmpty(vals []string) []string {
	var out []string
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			out = append(out, v)
		}
	}
	return out
}

// parseUnix parses decimal digits without sign or leading zeros, so that
// the text signed is exactly the text the number formats as.
func parseUnix(s string) (int64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
