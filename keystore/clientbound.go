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

// ClientBound is the bound of a [ClientBounded] store: a client acquires
// at most Keys new keys in a row, and a refused one may acquire again at
// most Window later (FullError.RetryAfter says when). How the count
// recovers is the store's: a window that starts with the client's first
// counted key and ends Window later (redisstore; pgstore, for each of the
// rows it splits a client's count over), or a rate of Keys per Window
// (memstore, under contention). Claims of one client that race may
// overshoot Keys by as many as race, less one, on a store that reads the
// others' counts before it acquires (pgstore, whose claims of one client
// do not wait for each other); claims one after the other never do.
type ClientBound struct {
	Keys   int
	Window time.Duration
}
