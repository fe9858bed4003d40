package middleware

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// MaxIdempotencyKeyLen is the longest Idempotency-Key value accepted, in
// characters, after any structured-field quoting is removed. It bounds the
// client's key, not the stored key: that is [StoreKey]'s digest, which
// [keystore.MaxKeyLen] bounds in bytes.
const MaxIdempotencyKeyLen = 255

// ErrMalformedKey is wrapped by every error ParseKey returns.
var ErrMalformedKey = errors.New("middleware: malformed idempotency key")

// ParseKey returns the key carried by one Idempotency-Key field value.
//
// The value may be an RFC 9651 structured-field String ("…", with \" and \\
// as its only escapes), as the Idempotency-Key draft specifies, or a bare
// value, as many senders send it. Surrounding spaces and tabs are ignored.
// The key must be 1 to MaxIdempotencyKeyLen printable ASCII characters (0x20 to 0x7E).
// A bare value must not start with a quote nor contain a comma: a comma is
// what an intermediary puts between two Idempotency-Key fields it combined
// into one (RFC 9110 section 5.3), so a key with a comma must be quoted. Errors wrap ErrMalformedKey and
// say what is wrong without echoing the value.
func ParseKey(field string) (string, error) {
	v := strings.Trim(field, " \t")
	if v == "" {
		return "", fmt.Errorf("%w: the value is empty", ErrMalformedKey)
	}
	if v[0] != '"' {
		if strings.IndexByte(v, ',') >= 0 {
			return "", fmt.Errorf("%w: a bare key must not contain a comma (two keys combined into one field?); quote it as a structured-field string", ErrMalformedKey)
		}
		return checkKey(v)
	}
	// An sf-string: DQUOTE *( unescaped / "\" ( DQUOTE / "\" ) ) DQUOTE
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i >= len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", fmt.Errorf("%w: a structured-field string may escape only \\\" and \\\\", ErrMalformedKey)
			}
			b.WriteByte(v[i])
		case c == '"':
			if i != len(v)-1 {
				return "", fmt.Errorf("%w: characters after the closing quote", ErrMalformedKey)
			}
			return checkKey(b.String())
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%w: byte 0x%02x at offset %d is not printable ASCII", ErrMalformedKey, c, i)
		default:
			b.WriteByte(c)
		}
		if b.Len() > MaxIdempotencyKeyLen {
			return "", fmt.Errorf("%w: longer than %d characters", ErrMalformedKey, MaxIdempotencyKeyLen)
		}
	}
	return "", fmt.Errorf("%w: a structured-field string without its closing quote", ErrMalformedKey)
}

func checkKey(k string) (string, error) {
	if k == "" {
		return "", fmt.Errorf("%w: the key is empty", ErrMalformedKey)
	}
	if len(k) > MaxIdempotencyKeyLen {
		return "", fmt.Errorf("%w: %d characters, longer than %d", ErrMalformedKey, len(k), MaxIdempotencyKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("%w: byte 0x%02x at offset %d is not printable ASCII", ErrMalformedKey, c, i)
		}
	}
	return k, nil
}

// StoreKey returns the key under which the middleware stores key for scope:
// the hexadecimal SHA-256 of both, length-prefixed so that no two different
// pairs collide by concatenation. Stored keys are fixed-length (64 bytes) and
// carry no raw client input. key is the Idempotency-Key as ParseKey returns
// it (a structured-field string unquoted): the geoidem command's keys
// subcommand parses its KEY argument so too.
func StoreKey(scope, key string) string {
	return storeKey4(scope, "", "", "", key)
}

// storeKey4 is StoreKey(a+b+c+d, key), without building a+b+c+d.
func storeKey4(a, b, c, d, key string) string {
	var stack [512]byte // scope and key usually fit: no allocation but the result
	buf := append(stack[:0], "geoidem key v1\x00"...)
	buf = binary.AppendUvarint(buf, uint64(len(a)+len(b)+len(c)+len(d)))
	buf = append(append(append(append(buf, a...), b...), c...), d...)
	buf = append(buf, key...)
	sum := sha256.Sum256(buf)
	var out [2 * sha256.Size]byte
	encodeHex(&out, &sum)
	return string(out[:])
}

// encodeHex is hex.Encode of a SHA-256 sum, in lowercase, four bytes at a
// time: each byte's nibbles are spread into a byte each of a word, and the
// word turned into digits at once. Every request encodes its stored key,
// and hex.Encode spends a table lookup and a bounds check on each digit.
func encodeHex(dst *[2 * sha256.Size]byte, src *[sha256.Size]byte) {
	const (
		ones = 0x0101010101010101
		low  = 0x000f000f000f000f
	)
	for g := range sha256.Size / 4 {
		v := uint64(binary.BigEndian.Uint32(src[4*g:]))
		// Each byte of v into 16 bits of its own, the first byte lowest.
		v = v>>16 | v&0xffff<<32
		v = v>>8&0x000000ff000000ff | v&0x000000ff000000ff<<16
		// Each byte's high nibble in its lane's low byte, its low nibble
		// in the lane's high byte: the digits' order, little-endian.
		n := v>>4&low | v&low<<8
		// 0x76 added to a nibble reaches 0x80 exactly when it is ten or
		// more, and carries nothing into the next byte: a letter, 'a'-10,
		// 39 past where '0'+n would be.
		letter := (n + 0x76*ones) >> 7 & ones
		binary.LittleEndian.PutUint64(dst[8*g:], n+'0'*ones+39*letter)
	}
}
