// Package frontdoor is a public HTTP receiver's front door: what it
// spends on a request before the request's work runs, and on its answer
// after. [New] builds it in one piece, in the right order, as a [Door]:
// its connections, the rate of request bodies, and the admission of work,
// with one notion of a client.
//
//	door, err := frontdoor.New(frontdoor.Config{
//		KnownNetworks: providerRanges,  // optional
//		Verify:        verifier.Verify, // optional: standardwebhooks
//	})
//	...
//	mux.Handle("POST /features", verifier.Precheck(door.Handler(verifier.Handler(idem.Handler(ingest)))))
//	srv := door.Server(mux) // ConnState, timeouts, answers that need no body
//	err = srv.Serve(door.Listener(ln))
//
// # Work is admitted, waiting is not
//
// A request takes a work slot only once its body has arrived (and, with
// Config.Verify, been checked): the handlers that claim keys and write
// records never wait on a client. While a body arrives it holds its bytes
// (Config.MaxBytes), its connection (Config.MaxConns) and a goroutine, and
// keeps to the body rate or is cut off with 408. When bytes are short, a
// request waits a moment, then makes room by cutting off the slowest body
// still arriving of a client with more bodies arriving than its own, never
// a known sender's; and while the connections are crowded (new ones about
// to wait in the kernel's accept queue), a body that has not moved for a
// second is cut off. The handler's answer is kept and written after the
// work slot is given back, at Config.MinWriteRate or its connection is
// closed, so a client that does not read its answer holds a connection,
// not a slot. [Door.Server] wraps the routes so that an answer that did
// not need the body (a refusal, a health check sent with a body) is not
// held waiting for a body that never comes.
//
// A request that finds no room waits up to Config.Wait for it, then is
// answered 503 server-busy (or 429 client-busy past its client's share)
// with a Retry-After that says when room frees: the first work slot
// expected to end, or the first deadline of a body arriving.
//
// # Known senders
//
// A sender whose network the operator lists (Config.KnownNetworks), or
// whose body verified (Config.Verify, for Config.KnownFor after), is a
// known sender: a quarter of the slots and bytes is reserved for known
// senders, and their bodies are never cut off to make room. A junk but
// well-formed signature earns nothing: only a body that verifies does.
//
// # Connections, bodies and clients
//
// The Door bounds the connections before any request exists, and only
// under contention: a legitimate sender's pool of 16 or 100 connections
// from one address, or a reverse proxy's, is never turned away while the
// service has room. Its [Door.Listener] keeps at most Config.MaxConns
// open; below that every connection is accepted. At it, a new connection
// takes the place of an idle one of the host holding the most, then of a
// busy one of that host whose body is still arriving, never of one whose
// request has arrived whole (it may hold a claimed key); a new connection
// of a host holding Config.MaxConnsPerHost or more is reset at accept,
// and any other waits for room. A connection is given back as soon as
// net/http is done with it. The ConnState of its [Door.Server] keeps the
// connections that wait for a request to Config.MaxIdle, closing the one
// that has waited longest. Each request's client, for every bound, is its
// remote address or, behind the reverse proxies it trusts, the right-most
// forwarded address that is not a trusted proxy's; an IPv4 address, an
// IPv6 /64, and an IPv6 /48 as four clients at most. Nothing is trusted
// by default. Each request body keeps to a minimum rate after a grace
// (byte n due Config.BodyGrace + n/Config.MinBodyRate after the request
// began, Apache mod_reqtimeout's rule), with a read deadline before each
// read; a body that falls behind is cut off and answered 408
// [ProblemSlowBody] with a Retry-After.
//
// Behind reverse proxies, name them in Config.TrustedProxies:
// each request's client is then the address they forward, for the Door's
// shares and known networks, and their connections are never reset for
// MaxConnsPerHost. Give [Door.Client] to the idempotency middleware
// (middleware.Config.Client), so that the key store's bounds count the
// same clients.
//
// Every decision of a Door is counted in [Door.Stats]; [Stats.Series]
// names each as a metric (geoidem_frontdoor_*), for the exporters of
// observe/promobserve and observe/otelobserve (their FrontDoor) and for a
// service that writes its metrics by hand.
package frontdoor
