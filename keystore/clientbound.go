package keystore

import "time"

// ClientBounded is an optional capability of a [Store] that bounds the new
// keys each client acquires, so that one client (one source address, say)
// cannot fill a store with keys of its own, and many take long to. The
// middleware names a claim's client in [ClaimArgs.Client]; claims without
// one ("") are never bounded. Found by type assertion; the conformance
// suite (package keystoretest) has its rules.
//
// The store counts a client's new keys: its Claims that acquire a key for
// which the store held no entry. A Claim that replays a record, reports a
// key in flight, repeats the holder's own Claim, or takes over an expired
// lease or a released key never counts, and is never refused for the
// bound; nor is a Claim refused for a client other than its own. Past its
// bound, a Claim of a new key for the client fails with a *FullError whose
// Client is set (an ErrStoreFull), acquiring nothing.
type ClientBounded interface {
	// ClientBound returns the bound the store holds every client to, or
	// the zero ClientBound when it holds them to none (as configured).
	ClientBound() ClientBound
}

// ClientBound is the bound of a [ClientBounded] store, the same on every
// store (their Config.ClientKeys and Config.ClientWindow): a client
// acquires at most Keys new keys in a window of Window that starts with
// its first counted key; past them, a Claim of a new key for the client
// fails with a *FullError whose Client is set and whose RetryAfter is
// when the window ends, after which the client acquires again (pgstore
// keeps such a window for each of the rows it splits a client's count
// over). A store may hold its clients to the bound only under contention,
// as its documentation says: memstore counts and refuses only the Claims
// made while it holds less free room than its headroom, so that a
// legitimate sender on an idle store is never refused; redisstore and
// pgstore count every Claim. Claims of one client that race may overshoot
// Keys by as many as race, less one, on a store that reads the others'
// counts before it acquires (pgstore, whose claims of one client do not
// wait for each other); claims one after the other never do.
type ClientBound struct {
	Keys   int
	Window time.Duration
}
