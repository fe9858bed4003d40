package frontdoor

import (
	"net"
	"testing"
)

// A host is an IPv4 address (IPv4-mapped IPv6 ones included) or an IPv6
// /64: every address of one subscriber's /64 counts as one host.
func TestHostOf(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"127.0.0.2", "127.0.0.2"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::"},
		{"2001:db8:1:2:bbbb::9", "2001:db8:1:2::"},
		{"::1", "::"},
	} {
		got, ok := hostOf(&net.TCPAddr{IP: net.ParseIP(c.addr), Port: 1})
		if !ok || got.String() != c.want {
			t.Errorf("hostOf(%s) = %v, %v; want %s", c.addr, got, ok, c.want)
		}
	}
	if _, ok := hostOf(&net.UnixAddr{Name: "/tmp/x", Net: "unix"}); ok {
		t.Error("a Unix socket address has a host")
	}
}
