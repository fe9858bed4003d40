package clientaddr

import (
	"net/netip"
	"testing"
)

// Prefix keeps an IPv4 address, unmaps an IPv4-mapped one, and takes an
// IPv6 address, alone in its /48, by its /64 without its zone.
func TestPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":                     "192.0.2.7/32",
		"::ffff:192.0.2.7":              "192.0.2.7/32",
		"2001:db8:1:2:ffff:ffff:ffff:1": "2001:db8:1:2::/64",
		"fe80::1%eth0":                  "fe80::/64",
		"::1":                           "::/64",
	} {
		if got := NewNamer(8).Prefix(netip.MustParseAddr(in)).String(); got != want {
			t.Errorf("Prefix(%s) = %s, want %s", in, got, want)
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

// Within a /48: the first two /64s of its first /56 are a client each,
// the rest of that /56 one, the rest of the /48 one; a Namer forgets the
// /48 seen least recently past its size, which then starts again.
func TestNamerHierarchy(t *testing.T) {
	n := NewNamer(2)
	for _, c := range []struct{ in, want string }{
		{"2001:db8:1:105::1", "2001:db8:1:105::/64"},
		{"2001:db8:1:1ff::1", "2001:db8:1:1ff::/64"},
		{"2001:db8:1:105::2", "2001:db8:1:105::/64"},
		{"2001:db8:1:107::1", "2001:db8:1:100::/56"},
		{"2001:db8:1:200::1", "2001:db8:1::/48"},
		{"2001:db8:1:1ff::9", "2001:db8:1:1ff::/64"},
		{"2001:db8:2::1", "2001:db8:2::/64"},
		{"2001:db8:3::1", "2001:db8:3::/64"}, // the third site: 2001:db8:1 forgotten
		{"2001:db8:1:200::1", "2001:db8:1:200::/64"},
	} {
		if got := n.Prefix(netip.MustParseAddr(c.in)).String(); got != c.want {
			t.Errorf("Prefix(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
