package middleware_test

import (
	"net/http"
	"testing"

	"github.com/geoidem/geoidem/middleware"
)

// RemoteClient names a request's client by its remote address: an IPv4
// address, an IPv4-mapped IPv6 address as that IPv4 one, and an IPv6
// address by its /64, which one subscriber holds whole.
func TestRemoteClient(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.7:4321":                     "192.0.2.7",
		"[::ffff:192.0.2.7]:4321":            "192.0.2.7",
		"[2001:db8:1:2::7]:4321":             "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:ffff:ffff:1]:80": "2001:db8:1:2::/64",
		"[2001:db8:1:3::7]:4321":             "2001:db8:1:3::/64",
		"[fe80::1%eth0]:4321":                "fe80::/64",
		"not an address":                     "not an address",
	} {
		r, _ := http.NewRequest(http.MethodPost, "/", nil)
		r.RemoteAddr = remote
		if got := middleware.RemoteClient(r); got != want {
			t.Errorf("RemoteClient(%q) = %q, want %q", remote, got, want)
		}
	}
}
