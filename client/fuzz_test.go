package client_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// unquote parses an RFC 9651 sf-string, as the receiver does.
func unquote(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		if c == '\\' {
			i++
			if i >= len(v)-1 || (v[i] != '"' && v[i] != '\\') {
				return "", false
			}
			c = v[i]
		} else if c == '"' {
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

func FuzzEncodeKey(f *testing.F) {
	for _, s := range []string{"k", "a b", `"q"`, `\`, "é", "", " x ", "urn:a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		v, err := client.EncodeKey(key)
		if err != nil {
			if !errors.Is(err, client.ErrInvalidDelivery) {
				t.Fatalf("EncodeKey(%q): unexpected error %v", key, err)
			}
			return
		}
		if strings.TrimSpace(v) != v {
			t.Fatalf("EncodeKey(%q) = %q: a header value would lose its spaces", key, v)
		}
		if v[0] != '"' {
			if v != key {
				t.Fatalf("bare EncodeKey(%q) = %q", key, v)
			}
			return
		}
		back, ok := unquote(v)
		if !ok || back != key {
			t.Fatalf("EncodeKey(%q) = %q, which parses back to %q, %v", key, v, back, ok)
		}
	})
}
