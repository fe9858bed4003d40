package frontdoor

import (
	"net/http"
	"net/netip"

	"github.com/geoidem/geoidem/internal/clientaddr"
)

// clientsConfig configures a clientNames: Config's TrustedProxies and
// ForwardedHeader.
type clientsConfig struct {
	// TrustedProxies are the networks of the reverse proxies in front of
	// the server. Default: none, and every client is
	// its remote address: trust only proxies that overwrite or append to
	// the header, or a client names itself.
	TrustedProxies []netip.Prefix
	// Header is the header the proxies append the client's address to:
	// "X-Forwarded-For" (default) or "Forwarded" (RFC 7239, its for=).
	Header string
}

// clientNames names each request's client, the one identity every
// request-level bound counts (the Door's shares, middleware.Config.Client):
// its remote address, or behind a
// trusted proxy the right-most address of the forwarding header that is
// not a trusted proxy's. An IPv4 address is a client, an IPv6 /64 is
// one, and an IPv6 /48 is four at most however many /64s it sends from
// (the first two /64s of its first /56 each, the rest of that /56, the
// rest of the /48), so that a site delegated a /48 cannot take many
// clients' share of any bound. Connections are counted by the same rule,
// by their TCP peer.
type clientNames struct {
	proxies *clientaddr.Proxies
}

// newClients returns a clientNames, or an error for a Header it does not read.
func newClients(cfg clientsConfig) (*clientNames, error) {
	p, err := clientaddr.NewProxies(cfg.TrustedProxies, cfg.Header)
	if err != nil {
		return nil, err
	}
	return &clientNames{proxies: p}, nil
}

// Client returns the name of r's client ("192.0.2.7", "2001:db8:1:2::/64",
// "2001:db8:1::/48"): a middleware.Config.Client.
func (c *clientNames) Client(r *http.Request) string { return c.proxies.Name(r) }
