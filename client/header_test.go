package client_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

func TestParseRetryAfter(t *testing.T) {
	now := epoch
	for _, tc := range []struct {
		value, date string
		want        time.Duration
		ok          bool
	}{
		{"", "", 0, false},
		{"  ", "", 0, false},
		{"-5", "", 0, false},
		{"1.5", "", 0, false},
		{"120", "", 2 * time.Minute, true},
		{" 3 ", "", 3 * time.Second, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", "", 30 * time.Second, true},
		{"Sunday, 01-Mar-26 12:00:30 GMT", "", 30 * time.Second, true},
		{"Sun Mar  1 12:00:30 2026", "", 30 * time.Second, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", "Sun, 01 Mar 2026 12:00:20 GMT", 10 * time.Second, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", "garbage", 30 * time.Second, true},
		{"Sun, 01 Mar 2026 11:00:00 GMT", "", 0, true},
		{"tomorrow", "", 0, false},
	} {
		got, ok := client.ParseRetryAfter(tc.value, tc.date, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q, %q) = %v, %v; want %v, %v", tc.value, tc.date, got, ok, tc.want, tc.ok)
		}
	}
	if d, ok := client.ParseRetryAfter("999999999999999999999999", "", now); !ok || d <= 100*365*24*time.Hour {
		t.Errorf("huge delta = %v, %v; want a huge positive delay", d, ok)
	}
}

func TestEncodeKey(t *testing.T) {
	for key, want := range map[string]string{
		"abc-123":                              "abc-123",
		"6f1c2a1e-9b4f-4a57-9c55-2c1b7f3c8a10": "6f1c2a1e-9b4f-4a57-9c55-2c1b7f3c8a10",
		"urn:geo/1.2":                          "urn:geo/1.2",
		"a b":                                  `"a b"`,
		`say "hi"`:                             `"say \"hi\""`,
		`back\slash`:                           `"back\\slash"`,
		" lead":                                `" lead"`,
	} {
		got, err := client.EncodeKey(key)
		if err != nil || got != want {
			t.Errorf("EncodeKey(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
	for _, key := range []string{"\x00", "tab\there", "\x7f", "ключ"} {
		if _, err := client.EncodeKey(key); !errors.Is(err, client.ErrInvalidDelivery) || !strings.Contains(err.Error(), "outside printable ASCII") {
			t.Errorf("EncodeKey(%q) err = %v, want ErrInvalidDelivery for a byte outside printable ASCII", key, err)
		}
	}
}
