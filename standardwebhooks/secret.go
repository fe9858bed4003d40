package standardwebhooks

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// secretPrefix marks a serialized symmetric signing secret: "whsec_"
// followed by the standard base64 encoding of the key bytes.
const secretPrefix = "whsec_"

// minSigningSecretLen is the shortest key, in bytes, of any Secret:
// the specification requires secrets of at least 24 random bytes, and
// [ParseSecret] refuses shorter ones, so neither a [Signer]
// nor a [Verifier] can run on a key an attacker could guess ("whsec_AA" is
// one zero byte).
const minSigningSecretLen = 24

// A Secret is a symmetric (HMAC-SHA256) signing key shared by a sender and
// its receiver. The zero Secret holds no key and is rejected wherever a
// secret is required; its Encode is "". A Secret is immutable and safe for concurrent use.
//
// Its String and GoString methods print a placeholder, never the key, so a
// Secret that reaches a log or an error message does not leak; use
// [Secret.Encode] to serialize it deliberately.
type Secret struct {
	key []byte
}

// ParseSecret parses a serialized secret: "whsec_" followed by the standard
// base64 encoding of the key, as the specification presents secrets. Like
// the reference libraries, it also accepts the base64 text without the
// prefix, and it accepts base64 with or without padding. Surrounding white
// space (a trailing newline from a file or an environment variable) is
// ignored. A key shorter than 24 bytes is refused. Raw key bytes b are
// "whsec_" + base64.StdEncoding.EncodeToString(b).
//
// Asymmetric keys ("whsk_", "whpk_": ed25519, signature version v1a) are
// refused: parse them with [ParseSigningKey] and [ParsePublicKey]. Errors
// wrap [ErrInvalidKey].
func ParseSecret(s string) (Secret, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, signingKeyPrefix) || strings.HasPrefix(s, publicKeyPrefix) {
		return Secret{}, fmt.Errorf("%w: an asymmetric (ed25519, v1a) key, not a secret: use ParseSigningKey (whsk_) or ParsePublicKey (whpk_)", ErrInvalidKey)
	}
	s = strings.TrimPrefix(s, secretPrefix)
	if s == "" {
		return Secret{}, fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	key, err := decodeBase64(s)
	if err != nil {
		// The base64 error names an offset only; it does not echo input.
		return Secret{}, fmt.Errorf("%w: not base64: %v", ErrInvalidKey, err)
	}
	return newSecret(key)
}

// newSecret returns a Secret holding a copy of key, the raw key bytes (not
// base64). It returns an error, wrapping ErrInvalidKey, for a key
// shorter than 24 bytes.
func newSecret(key []byte) (Secret, error) {
	if len(key) == 0 {
		return Secret{}, fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(key) < minSigningSecretLen {
		return Secret{}, fmt.Errorf("%w: %d bytes long; secrets must be at least %d", ErrInvalidKey, len(key), minSigningSecretLen)
	}
	return Secret{key: append([]byte(nil), key...)}, nil
}

// GenerateSecret returns a new random Secret of 32 bytes from crypto/rand,
// for a sender to give to a new receiver (serialized with [Secret.Encode]).
func GenerateSecret() Secret {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails: crypto/rand.Read crashes the program instead
	return Secret{key: key}
}

// Encode returns the secret in its serialized form, "whsec_" followed by
// the standard base64 encoding of the key, which [ParseSecret] reads back.
// The zero Secret encodes as "".
func (s Secret) Encode() string {
	if len(s.key) == 0 {
		return ""
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(s.key)
}

// isZero reports whether s holds no key.
func (s Secret) isZero() bool { return len(s.key) == 0 }

// String returns a placeholder that does not reveal the key.
func (s Secret) String() string {
	if s.isZero() {
		return "standardwebhooks.Secret(none)"
	}
	return "standardwebhooks.Secret(redacted)"
}

// GoString returns the same placeholder as String, so that %#v does not
// print the key either.
func (s Secret) GoString() string { return s.String() }
