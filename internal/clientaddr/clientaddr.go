// Package clientaddr names a network client by its address, the one way
// every bound on clients in this module counts them (frontdoor's
// connections per host and shares, the key stores'
// per-client bounds through middleware.RemoteClient): an IPv4 address, an
// IPv4-mapped IPv6 address as that IPv4 one, and an IPv6 address by its
// /64, since one subscriber is given a /64 and may send from any address
// in it; but a site is delegated a /56 or a /48, so a /48 counts as four
// clients at most (see [Namer]). Behind proxies, [Proxies] finds the
// client's address in the request's forwarding header.
package clientaddr

import (
	"net"
	"net/netip"
)

// Prefix returns the prefix ip counts as, by the process's one Namer: a
// /32 for an IPv4 address (an IPv4-mapped IPv6 address is the IPv4 one),
// else a /64, /56 or /48 without a zone (see [Namer.Prefix]).
func Prefix(ip netip.Addr) netip.Prefix { return process.Prefix(ip) }

// process is the Namer every bound of the process shares, so that one
// address is one client to all of them.
var process = NewNamer(DefaultSites)

// Name returns the name of the client at remoteAddr, a "host:port" as in
// http.Request.RemoteAddr: an IPv4 address ("192.0.2.7"), or an IPv6
// prefix ("2001:db8:1:2::/64"; see Prefix). A remoteAddr that holds no IP
// address is named by its host part, or by itself when it has none.
func Name(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	return NameOf(ip)
}

// NameOf returns the name of the client at ip, as Name does.
func NameOf(ip netip.Addr) string {
	p := Prefix(ip)
	if p.Addr().Is4() {
		return p.Addr().String()
	}
	return p.String()
}
