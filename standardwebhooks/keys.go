package standardwebhooks

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// The serialized forms of asymmetric (ed25519, signature version v1a)
// keys, as the specification presents them: the prefix followed by the
// standard base64 encoding of the key bytes.
const (
	// publicKeyPrefix marks a public key: 32 bytes, the ed25519 public
	// key a receiver verifies with ([ParsePublicKey]).
	publicKeyPrefix = "whpk_"
	// signingKeyPrefix marks a signing (secret) key: 32 bytes, the ed25519
	// seed (RFC 8032's private key) a sender signs with
	// ([ParseSigningKey]), as the reference libraries read it.
	signingKeyPrefix = "whsk_"
)

// signatureVersionAsymmetric is the version tag of the asymmetric
// (ed25519) signatures this package produces and checks.
const signatureVersionAsymmetric = "v1a"

// ErrInvalidKey is wrapped by every error ParseSecret, ParseSigningKey and
// ParsePublicKey return: a key that does not parse, or is too short to be
// safe. The errors never contain the key.
var ErrInvalidKey = errors.New("standardwebhooks: invalid key")

// A PublicKey is the ed25519 public key a receiver verifies v1a signatures
// with. The zero PublicKey holds no key (its Encode is "") and is rejected
// wherever a key is required. A PublicKey is immutable and safe for
// concurrent use; it is not secret.
//
// A receiver's public keys are its configuration, its trust list: never
// take one from the request.
type PublicKey struct {
	key ed25519.PublicKey
}

// A SigningKey is the ed25519 private key a sender makes v1a signatures
// with. The zero SigningKey holds no key (its Encode is "") and is rejected
// wherever a key is required. A SigningKey is immutable and safe for concurrent use.
//
// Its String and GoString methods print a placeholder, never the key; use
// [SigningKey.Encode] to serialize it deliberately, and give receivers
// its [SigningKey.Public] key, never the signing key itself.
type SigningKey struct {
	key ed25519.PrivateKey
}

// ParsePublicKey parses a serialized public key: "whpk_" followed by the
// standard base64 encoding of the 32-byte ed25519 public key. Like
// [ParseSecret], it accepts the base64 text without the prefix, with or
// without padding, and ignores surrounding white space. A signing key
// ("whsk_") or a symmetric secret ("whsec_") is refused, as is a key of
// any other length. Errors wrap [ErrInvalidKey].
//
// ParsePublicKey checks the length only; whether the bytes encode a point
// of the curve shows when a signature is verified with them (none does).
func ParsePublicKey(s string) (PublicKey, error) {
	key, err := parseKey(s, publicKeyPrefix, "public key", map[string]string{
		signingKeyPrefix: "a signing key (whsk_), not a public key: give a receiver the signing key's public key (SigningKey.Public), never the signing key",
		secretPrefix:     "a symmetric secret (whsec_), not a public key: use ParseSecret and VerifierConfig.Secrets",
	})
	if err != nil {
		return PublicKey{}, err
	}
	return newPublicKey(key)
}

// newPublicKey returns a PublicKey holding a copy of key, which must be
// ed25519.PublicKeySize (32) bytes. Errors wrap ErrInvalidKey.
func newPublicKey(key ed25519.PublicKey) (PublicKey, error) {
	switch len(key) {
	case 0:
		return PublicKey{}, fmt.Errorf("%w: empty public key", ErrInvalidKey)
	case ed25519.PublicKeySize:
		return PublicKey{key: append(ed25519.PublicKey(nil), key...)}, nil
	}
	return PublicKey{}, fmt.Errorf("%w: a public key of %d bytes; ed25519 public keys are %d", ErrInvalidKey, len(key), ed25519.PublicKeySize)
}

// ParseSigningKey parses a serialized signing key: "whsk_" followed by the
// standard base64 encoding of the 32-byte ed25519 seed, the form the
// Standard Webhooks reference libraries read (their Go library passes it
// to ed25519.NewKeyFromSeed) and [SigningKey.Encode] writes. The 64-byte
// form of crypto/ed25519's PrivateKey (the seed followed by the public key)
// is refused: its first 32 bytes are the seed (PrivateKey.Seed), so a
// crypto/ed25519 key k is "whsk_" + base64.StdEncoding.EncodeToString(k.Seed()). Like [ParseSecret], it
// accepts the base64 text without the prefix, with or without padding, and
// ignores surrounding white space. A public key ("whpk_") or a symmetric
// secret ("whsec_") is refused. Errors wrap [ErrInvalidKey].
func ParseSigningKey(s string) (SigningKey, error) {
	seed, err := parseKey(s, signingKeyPrefix, "signing key", map[string]string{
		publicKeyPrefix: "a public key (whpk_), not a signing key: a sender signs with the signing key (whsk_)",
		secretPrefix:    "a symmetric secret (whsec_), not a signing key: use ParseSecret and SignerConfig.Secrets",
	})
	if err != nil {
		return SigningKey{}, err
	}
	return newSigningKey(seed)
}

// newSigningKey returns the SigningKey of seed, the 32-byte ed25519 seed.
// Errors wrap ErrInvalidKey.
func newSigningKey(seed []byte) (SigningKey, error) {
	switch len(seed) {
	case 0:
		return SigningKey{}, fmt.Errorf("%w: empty signing key", ErrInvalidKey)
	case ed25519.SeedSize:
		return SigningKey{key: ed25519.NewKeyFromSeed(seed)}, nil
	case ed25519.PrivateKeySize:
		return SigningKey{}, fmt.Errorf("%w: a signing key of %d bytes, an ed25519 private key with its public key appended; a signing key is the %d-byte seed, its first half", ErrInvalidKey, len(seed), ed25519.SeedSize)
	}
	return SigningKey{}, fmt.Errorf("%w: a signing key of %d bytes; it is the %d-byte ed25519 seed", ErrInvalidKey, len(seed), ed25519.SeedSize)
}

// GenerateSigningKey returns a new random SigningKey from crypto/rand, for
// a sender to sign with (serialized with [SigningKey.Encode]); its
// receivers get [SigningKey.Public].
func GenerateSigningKey() SigningKey {
	_, key, _ := ed25519.GenerateKey(nil) // never fails: crypto/rand crashes the program instead
	return SigningKey{key: key}
}

// parseKey returns the bytes of the serialized key s of the given prefix,
// which may be left out; other lists the prefixes of the other kinds of
// key, each with why it is refused.
func parseKey(s, prefix, what string, other map[string]string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for p, why := range other {
		if strings.HasPrefix(s, p) {
			return nil, fmt.Errorf("%w: %s", ErrInvalidKey, why)
		}
	}
	s = strings.TrimPrefix(s, prefix)
	if s == "" {
		return nil, fmt.Errorf("%w: empty %s", ErrInvalidKey, what)
	}
	key, err := decodeBase64(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %s not base64: %v", ErrInvalidKey, what, err)
	}
	return key, nil
}

// decodeBase64 decodes standard base64, padded or not. Its error names an
// offset only; it does not echo input.
func decodeBase64(s string) ([]byte, error) {
	enc := base64.StdEncoding
	if !strings.HasSuffix(s, "=") && len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	return enc.DecodeString(s)
}

// Public returns the public key of k, for its receivers. The zero
// SigningKey's is the zero PublicKey.
func (k SigningKey) Public() PublicKey {
	if k.isZero() {
		return PublicKey{}
	}
	return PublicKey{key: k.key.Public().(ed25519.PublicKey)}
}

// Encode returns the key in its serialized form, "whsk_" followed by the
// standard base64 encoding of its 32-byte seed, which [ParseSigningKey]
// reads back. The zero SigningKey encodes as "".
func (k SigningKey) Encode() string {
	if k.isZero() {
		return ""
	}
	return signingKeyPrefix + base64.StdEncoding.EncodeToString(k.key.Seed())
}

// isZero reports whether k holds no key.
func (k SigningKey) isZero() bool { return len(k.key) == 0 }

// String returns a placeholder that does not reveal the key.
func (k SigningKey) String() string {
	if k.isZero() {
		return "standardwebhooks.SigningKey(none)"
	}
	return "standardwebhooks.SigningKey(redacted)"
}

// GoString returns the same placeholder as String, so that %#v does not
// print the key either.
func (k SigningKey) GoString() string { return k.String() }

// Encode returns the key in its serialized form, "whpk_" followed by the
// standard base64 encoding of its 32 bytes, which [ParsePublicKey] reads
// back. The zero PublicKey encodes as "".
func (k PublicKey) Encode() string {
	if len(k.key) == 0 {
		return ""
	}
	return publicKeyPrefix + base64.StdEncoding.EncodeToString(k.key)
}

// edSign returns the base64 ed25519 signature of id.timestamp.body.
func edSign(key SigningKey, id, timestamp string, body []byte) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(key.key, signedContent(id, timestamp, body)))
}

// signedContent returns id.timestamp.body, the content every signature
// covers.
func signedContent(id, timestamp string, body []byte) []byte {
	b := make([]byte, 0, len(id)+1+len(timestamp)+1+len(body))
	b = append(b, id...)
	b = append(b, '.')
	b = append(b, timestamp...)
	b = append(b, '.')
	return append(b, body...)
}
