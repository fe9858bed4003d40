// Package clientaddr names a network client by its address, the one way
// every bound on clients in this module counts them (frontdoor's
// connections per host, middleware.Admission's shares, the key stores'
// per-client bounds through middleware.RemoteClient): an IPv4 address, an
// IPv4-mapped IPv6 address as that IPv4 one, and an IPv6 address by its
// /64, since one subscriber is given a /64 and may send from any address
// in it.
package clientaddr

import (
	"net"
	"net/netip"
)

// Host returns the host ip counts as: ip itself when IPv4 (unmapped), else
// the first address of its /64, without a zone.
func Host(ip netip.Addr) netip.Addr {
	ip = ip.Unmap()
	if ip.Is6() {
		ip = netip.PrefixFrom(ip.WithZone(""), 64).Masked().Addr()
	}
	return ip
}

// Name returns the name of the client at remoteAddr, a "host:port" as in
// http.Request.RemoteAddr: an IPv4 address ("192.0.2.7"), or an IPv6 /64
// ("2001:db8:1:2::/64"). A remoteAddr that holds no IP address is named by
// its host part, or by itself when it has none.
func Name(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	h := Host(ip)
	if h.Is6() {
		return netip.PrefixFrom(h, 64).String()
	}
	return h.String()
}
