package middleware

import (
	"net/http"

	"github.com/geoidem/geoidem/internal/clientaddr"
)

// RemoteClient names r's client by its remote address, as every bound on
// clients in this module counts them (the front door's connections and
// shares too): an IPv4 address ("192.0.2.7"; an IPv4-mapped IPv6 address
// as that IPv4 one), or an IPv6 /64 ("2001:db8:1:2::/64"), since one
// subscriber is given a /64 and may send from any address in it; but a
// site is delegated a /56 or a /48, and a /48 counts as four clients at
// most (its first two /64s, then the rest of their /56, then the rest of
// the /48: "2001:db8:1::/48"). It is what Config.Client should return for
// a public receiver without authenticated senders. Behind a reverse proxy
// every request's remote address is the proxy's: name clients by the
// front door's (frontdoor.Door.Client) there.
func RemoteClient(r *http.Request) string { return clientaddr.Name(r.RemoteAddr) }
