package clientaddr

import (
	"net/netip"
	"testing"
)

// Host keeps an IPv4 address, unmaps an IPv4-mapped one, and masks an
// IPv6 address to its /64 without its zone.
func TestHost(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":                     "192.0.2.7",
		"::ffff:192.0.2.7":              "192.0.2.7",
		"2001:db8:1:2:ffff:ffff:ffff:1": "2001:db8:1:2::",
		"fe80::1%eth0":                  "fe80::",
		"::1":                           "::",
	} {
		if got := Host(netip.MustParseAddr(in)).String(); got != want {
			t.Errorf("Host(%s) = %s, want %s", in, got, want)
		}
	}
}

// Name reads a RemoteAddr: a host and port, or something that holds no
// IP address, which is named as it is.
func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:1":         "192.0.2.7",
		"[2001:db8::5]:1":     "2001:db8::/64",
		"192.0.2.7":           "192.0.2.7",
		"pipe:1":              "pipe",
		"@":                   "@",
		"[::ffff:10.0.0.1]:0": "10.0.0.1",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}
