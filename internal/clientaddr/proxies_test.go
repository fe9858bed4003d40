package clientaddr

import (
	"net/http"
	"net/netip"
	"testing"
)

// Behind trusted proxies, the client is the right-most forwarded address
// that is not a trusted proxy's; from an address not trusted, the header
// is the client's own and ignored; nothing is trusted by default.
func TestProxies(t *testing.T) {
	trusted, err := ParsePrefixes("10.0.0.0/8, 192.0.2.1,2001:db8:ff::/48")
	if err != nil {
		t.Fatal(err)
	}
	xff, err := NewProxies(trusted, "")
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := NewProxies(trusted, "forwarded")
	if err != nil {
		t.Fatal(err)
	}
	none, _ := NewProxies(nil, "")
	for _, c := range []struct {
		p      *Proxies
		remote string
		header []string
		want   string
	}{
		{xff, "10.1.1.1:5", []string{"198.51.100.7"}, "198.51.100.7"},
		{xff, "10.1.1.1:5", []string{"203.0.113.9, 198.51.100.7, 10.2.2.2"}, "198.51.100.7"},
		{xff, "10.1.1.1:5", []string{"203.0.113.9", "198.51.100.7, 192.0.2.1"}, "198.51.100.7"},
		{xff, "198.51.100.8:5", []string{"203.0.113.9"}, "198.51.100.8"},   // not from a proxy: its own
		{none, "10.1.1.1:5", []string{"198.51.100.7"}, "10.1.1.1"},         // nothing trusted
		{xff, "10.1.1.1:5", nil, "10.1.1.1"},                               // no header: the proxy
		{xff, "10.1.1.1:5", []string{"unknown, 10.2.2.2"}, "10.2.2.2"},     // not an address: the proxy that wrote it
		{xff, "10.1.1.1:5", []string{"[2001:db8::7]:99"}, "2001:db8::/64"}, // address and port
		{xff, "[2001:db8:ff::1]:5", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
		{xff, "[::ffff:10.1.1.1]:5", []string{"198.51.100.7"}, "198.51.100.7"},
		{fwd, "10.1.1.1:5", []string{`for=203.0.113.9, for="[2001:db8:cafe::17]:4711";proto=https`}, "2001:db8:cafe::/64"},
		{fwd, "10.1.1.1:5", []string{`for=198.51.100.7;by=10.0.0.1, For=10.3.3.3`}, "198.51.100.7"},
		{fwd, "10.1.1.1:5", []string{`for=_hidden`}, "10.1.1.1"},
	} {
		r, _ := http.NewRequest(http.MethodPost, "/", nil)
		r.RemoteAddr = c.remote
		name := "X-Forwarded-For"
		if c.p == fwd {
			name = "Forwarded"
		}
		for _, v := range c.header {
			r.Header.Add(name, v)
		}
		if got := c.p.Name(r); got != c.want {
			t.Errorf("%s from %s %q: client %q, want %q", name, c.remote, c.header, got, c.want)
		}
	}
	if _, err := NewProxies(nil, "X-Real-IP"); err == nil {
		t.Error("NewProxies took X-Real-IP")
	}
	if _, err := ParsePrefixes("10.0.0.0/33"); err == nil {
		t.Error("ParsePrefixes took 10.0.0.0/33")
	}
	if !xff.Trusted(netip.MustParseAddr("::ffff:10.9.9.9")) {
		t.Error("an IPv4-mapped address of a trusted network is not trusted")
	}
}
