package middleware_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/middleware"
)

func TestParseKeyAccepts(t *testing.T) {
	for field, want := range map[string]string{
		"8e03978e-40d5-43e8-bc93-6894a57f9324":   "8e03978e-40d5-43e8-bc93-6894a57f9324",
		`"8e03978e-40d5-43e8-bc93-6894a57f9324"`: "8e03978e-40d5-43e8-bc93-6894a57f9324",
		` "quoted \" and \\ escapes" `:           `quoted " and \ escapes`,
		"  spaced  ":                             "spaced",
		"inner space":                            "inner space",
		strings.Repeat("k", 255):                 strings.Repeat("k", 255),
		`"` + strings.Repeat("k", 255) + `"`:     strings.Repeat("k", 255),
		"~!#$%&'()*+-./:;<=>?@[]^_`{|}":          "~!#$%&'()*+-./:;<=>?@[]^_`{|}",
		`"a, quoted, comma"`:                     "a, quoted, comma",
	} {
		got, err := middleware.ParseKey(field)
		if err != nil || got != want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q", field, got, err, want)
		}
	}
	if _, err := middleware.ParseKey("\x00"); !errors.Is(err, middleware.ErrMalformedKey) {
		t.Errorf("ParseKey(NUL): %v, want ErrMalformedKey", err)
	}
}

func TestStoreKeyIsHashed(t *testing.T) {
	k := middleware.StoreKey("POST /features", "secret-key")
	if len(k) != 64 || strings.Contains(k, "secret") {
		t.Fatalf("StoreKey = %q, want 64 hex characters carrying no input", k)
	}
	if middleware.StoreKey("POST /a", "b") == middleware.StoreKey("POST /", "ab") {
		t.Fatal("StoreKey collides on concatenation")
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"abc", `"abc"`, `"a\"b"`, `"a\\b"`, "", " ", `"`, `"\`, "\x00", "é", strings.Repeat("a", 256)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		key, err := middleware.ParseKey(field)
		if err != nil {
			return
		}
		if key == "" || len(key) > middleware.MaxIdempotencyKeyLen {
			t.Fatalf("ParseKey(%q) accepted %q of length %d", field, key, len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("ParseKey(%q) accepted byte 0x%02x", field, key[i])
			}
		}
		if !strings.HasPrefix(strings.TrimLeft(field, " \t"), `"`) && strings.Contains(key, ",") {
			t.Fatalf("ParseKey(%q) accepted a bare key with a comma", field)
		}
		// Quoting the key as an sf-string gives it back.
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if again, err := middleware.ParseKey(quoted); err != nil || again != key {
			t.Fatalf("ParseKey(%q) = %q, %v; want %q", quoted, again, err, key)
		}
	})
}
