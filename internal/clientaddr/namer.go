package clientaddr

import (
	"container/list"
	"net/netip"
	"sync"
)

// DefaultSites is the number of IPv6 /48s a Namer from the process
// remembers: some 2.5 MB.
const DefaultSites = 16384

// A Namer names IPv6 clients so that one site counts as a few clients,
// whatever it sends from. A subscriber is given a /64 and a site a /56 or
// a /48; counting every /64 as a client would give a /48 65,536 clients'
// worth of every bound, and counting the /48 would make one client of
// every sender a provider hosts in one. So, within each /48, in the order
// they are first seen:
//
//   - the first two /64s of the first /56 are a client each;
//   - the rest of that /56 is one client;
//   - the rest of the /48 is one client.
//
// A /48 is four clients at most, and a sender alone in its /48 (the usual
// case) is its /64. A Namer remembers this for the last maxSites /48s
// seen, forgetting the one seen least recently past that; a site
// forgotten starts again as one not seen yet. It is safe for concurrent
// use.
type Namer struct {
	maxSites int

	mu    sync.Mutex
	sites map[netip.Prefix]*list.Element // of *site, by /48
	lru   list.List                      // the site seen least recently first
}

// site is what a Namer remembers of one /48.
type site struct {
	p48   netip.Prefix
	first netip.Prefix    // its first /56 seen
	named [2]netip.Prefix // the first two /64s of first seen (zero: none yet)
}

// NewNamer returns a Namer that remembers maxSites /48s (at least one).
func NewNamer(maxSites int) *Namer {
	return &Namer{maxSites: max(maxSites, 1), sites: map[netip.Prefix]*list.Element{}}
}

// Prefix returns the prefix ip counts as: a /32 for an IPv4 address (an
// IPv4-mapped IPv6 address is the IPv4 one), else a /64, /56 or /48 of it
// without its zone, as the type's documentation says.
func (n *Namer) Prefix(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap().WithZone("")
	if ip.Is4() || !ip.IsValid() {
		return netip.PrefixFrom(ip, ip.BitLen())
	}
	p48, _ := ip.Prefix(48)
	p56, _ := ip.Prefix(56)
	p64, _ := ip.Prefix(64)
	n.mu.Lock()
	defer n.mu.Unlock()
	var s *site
	if e, ok := n.sites[p48]; ok {
		n.lru.MoveToBack(e)
		s = e.Value.(*site)
	} else {
		if n.lru.Len() >= n.maxSites {
			delete(n.sites, n.lru.Remove(n.lru.Front()).(*site).p48)
		}
		s = &site{p48: p48, first: p56}
		n.sites[p48] = n.lru.PushBack(s)
	}
	if p56 != s.first {
		return p48
	}
	for i, named := range s.named {
		if named == p64 {
			return p64
		}
		if !named.IsValid() {
			s.named[i] = p64
			return p64
		}
	}
	return p56
}
