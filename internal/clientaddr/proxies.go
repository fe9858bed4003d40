package clientaddr

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies finds a request's client behind trusted proxies: the right-most
// address of the forwarding header that is not a trusted proxy's, when the
// request comes from a trusted proxy; the remote address otherwise. The
// zero Proxies trusts nothing: every client is its remote address.
type Proxies struct {
	trusted   []netip.Prefix
	forwarded bool // the Forwarded header (RFC 7239), else X-Forwarded-For
}

// NewProxies returns the Proxies that trusts the networks given, reading
// header: "X-Forwarded-For" (or "") or "Forwarded", the one the proxies
// set. A header the proxies do not set is the client's to write.
func NewProxies(trusted []netip.Prefix, header string) (*Proxies, error) {
	p := &Proxies{}
	switch http.CanonicalHeaderKey(header) {
	case "", "X-Forwarded-For":
	case "Forwarded":
		p.forwarded = true
	default:
		return nil, errors.New("clientaddr: the forwarding header is X-Forwarded-For or Forwarded, not " + header)
	}
	for _, n := range trusted {
		if !n.IsValid() {
			return nil, errors.New("clientaddr: an invalid trusted network")
		}
		p.trusted = append(p.trusted, netip.PrefixFrom(n.Addr().Unmap(), unmappedBits(n)).Masked())
	}
	return p, nil
}

// unmappedBits returns n's length as a prefix of its unmapped address.
func unmappedBits(n netip.Prefix) int {
	if n.Addr().Is4In6() {
		return max(n.Bits()-96, 0)
	}
	return n.Bits()
}

// ParsePrefixes parses a comma-separated list of networks (CIDR) and
// addresses (a network of one), as a flag gives them; "" is none.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, err
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Trusted reports whether ip is a trusted proxy's.
func (p *Proxies) Trusted(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	for _, n := range p.trusted {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// Addr returns the address of r's client: its remote address, unless that
// is a trusted proxy's; then, going from the right of the forwarding
// header, the first address that is not a trusted proxy's. An entry that
// is not an address (absent, "unknown", obfuscated) stops the walk: the
// client is then the trusted proxy that wrote it. It reports false when
// r.RemoteAddr holds no address.
func (p *Proxies) Addr(r *http.Request) (netip.Addr, bool) {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	client := peer.Addr().Unmap()
	if len(p.trusted) == 0 || !p.Trusted(client) {
		return client, true
	}
	name := "X-Forwarded-For"
	if p.forwarded {
		name = "Forwarded"
	}
	var hops []string
	for _, line := range r.Header.Values(name) {
		hops = append(hops, strings.Split(line, ",")...)
	}
	for i := len(hops) - 1; i >= 0 && p.Trusted(client); i-- {
		hop := hops[i]
		if p.forwarded {
			hop = forwardedFor(hop)
		}
		a, ok := parseHop(hop)
		if !ok {
			break
		}
		client = a
	}
	return client, true
}

// Name returns the name of r's client (Addr, named as [NameOf] does), or
// [Name] of r.RemoteAddr when it holds no address.
func (p *Proxies) Name(r *http.Request) string {
	if a, ok := p.Addr(r); ok {
		return NameOf(a)
	}
	return Name(r.RemoteAddr)
}

// forwardedFor returns the for= value of one element of a Forwarded
// header, unquoted ("" when it has none).
func forwardedFor(elem string) string {
	for pair := range strings.SplitSeq(elem, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "for") {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}

// parseHop parses one hop's address: an address, or an address and port
// ("192.0.2.1:80", "[2001:db8::1]:80"), or a bracketed IPv6 address.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}
