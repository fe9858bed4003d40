package clientaddr

import (
	"fmt"
	"testing"
)

// One IPv6 /48, a site's delegation, counts as a few clients at most
// however many /64s it sends from, while the first /64s of a site are each
// a client of their own and another site is not affected.
func TestSiteCountsAsAFewClients(t *testing.T) {
	names := map[string]bool{}
	for s56 := range 16 {
		for s64 := range 16 {
			names[Name(fmt.Sprintf("[2001:db8:7:%x%02x::1]:443", s56, s64))] = true
		}
	}
	if len(names) > 4 {
		t.Errorf("256 /64s of one /48 are %d clients, want at most 4", len(names))
	}
	if got := Name("[2001:db8:7:0::9]:1"); got != "2001:db8:7::/64" {
		t.Errorf("the site's first /64 is %q, want its own client 2001:db8:7::/64", got)
	}
	if got := Name("[2001:db8:8:1::1]:1"); got != "2001:db8:8:1::/64" {
		t.Errorf("another site's first /64 is %q, want 2001:db8:8:1::/64", got)
	}
}
