// Package frontdoor bounds what a public HTTP receiver spends below the
// request layer, where middleware.Admission cannot see: connections, and
// request bodies that arrive too slowly; and it names each request's
// client, the identity every bound on clients counts. Admission bounds
// the requests in flight and each client's share of them; without a front
// door, a few addresses still shut everyone else out (against
// examples/ingest):
//
//   - slow bodies: 64 connections from 4 addresses, each declaring 100
//     bytes and sending one every 2 s, held all 64 admission slots until
//     the server's 30 s ReadTimeout and took them again at once: a sender
//     on another address was refused 143 times out of 143;
//   - idle connections: 20,600 keep-alive connections (700 KB sent)
//     exhausted the file descriptors (accept: too many open files), took
//     19–35 KB of memory each (480 MB), and /healthz timed out on 5 of 8
//     tries.
//
// # Connections
//
// A [Conns] bounds the connections before any request exists, and only
// under contention: a legitimate sender's pool of 16 or 100 connections
// from one address, or a reverse proxy's, is never turned away while the
// service has room. Its [Conns.Listener] keeps at most MaxConns open (one
// of them for the connection being accepted). Below that every connection
// is accepted. At it, a new connection takes the place of one open, in
// this order: an idle one (waiting for a request, new or between
// keep-alive requests) of the host holding the most, then a busy one of
// the host holding the most, its request's body still arriving; room is
// only taken from a host holding more than the newcomer's would. A
// connection whose request has arrived whole, which may hold a claimed
// key, is never closed ([Conns.Hold]). A new connection of a host holding
// MaxConnsPerHost or more is reset at accept, before net/http spends a
// goroutine or a buffer on it; any other that finds nothing to take waits
// in Accept for room, the rest in the kernel's queue. A host is an IPv4
// address or an IPv6 /64, an IPv6 /48 four hosts at most ([Clients]).
// Its [Conns.ConnState] keeps the connections waiting for a request to
// MaxIdle, closing the one that has waited longest. So 20,000 idle
// connections cost what MaxConns connections cost at most (about 36 MB at
// the default 1024), and a new connection, /healthz's, is served. A
// connection is given back as soon as net/http is done with it (at its
// CloseWrite, not half a second later at its Close). [ConnsStats] counts
// the connections refused and closed, by reason.
//
// # Clients
//
// A [Clients] names a request's client for every request-level bound
// (middleware.Config.Client, middleware.AdmissionConfig.Client): its
// remote address or, behind the reverse proxies named in
// ClientsConfig.TrustedProxies, the right-most address of X-Forwarded-For
// (or Forwarded) that is not a trusted proxy's. Nothing is trusted by
// default.
//
// # Slow bodies
//
// A [BodyRate] holds each request body to a minimum rate after a grace
// (byte n due Grace + n/MinRate after the request began, Apache
// mod_reqtimeout's rule), with a read deadline before each read
// (http.ResponseController.SetReadDeadline). A body that falls behind is
// cut off and answered 408 [ProblemSlowBody]; whatever held a slot for it
// gives it back then, not at the server's ReadTimeout, and
// middleware.Admission's Retry-After counts on [BodyDeadline].
//
// The rate is what makes each slot a slow body holds come back within
// seconds: Grace + length/MinRate (5.1 s for 100 bytes at the defaults),
// before it is cut off and, by an attacker that connects again at once,
// retaken. Connections are not refused while the service has room, so a
// few hosts may hold every one of Admission's slots with slow bodies
// (eight hosts of 8 connections hold its default 64), unless the
// Admission may cut bodies off to make room ([CutBody] as
// middleware.AdmissionConfig.CutBody): then a client that holds less than
// another gets in, the other's oldest slow body answered 408. At
// MaxConns, the hosts holding the most give way first. Many hosts holding
// one slot each can still hold every slot.
//
// # Wiring
//
// Hold goes around the POST route (it only wraps the body), BodyRate
// outside Admission (nothing else between them, so that BodyDeadline
// finds its body), Admission outside everything that reads a body (a
// signature verifier, the idempotency middleware); the Conns goes around
// the listener and into the http.Server:
//
//	conns, err := frontdoor.NewConns(frontdoor.ConnsConfig{})
//	...
//	clients, err := frontdoor.NewClients(frontdoor.ClientsConfig{})
//	...
//	rate, err := frontdoor.NewBodyRate(frontdoor.BodyRateConfig{})
//	...
//	admit, err := middleware.NewAdmission(middleware.AdmissionConfig{
//		Client:       clients.Client,
//		BodyDeadline: frontdoor.BodyDeadline,
//		CutBody:      frontdoor.CutBody,
//	})
//	...
//	post := conns.Hold(rate.Handler(admit.Handler(idem.Handler(ingest))))
//	mux.Handle("POST /features", post)
//	srv := &http.Server{
//		Handler:           mux,
//		ConnState:         conns.ConnState,
//		ReadHeaderTimeout: 5 * time.Second,
//		ReadTimeout:       frontdoor.DefaultBodyTimeout, // for what BodyRate does not read
//		IdleTimeout:       frontdoor.DefaultIdleTimeout,
//		MaxHeaderBytes:    16 << 10,
//	}
//	err = srv.Serve(conns.Listener(ln))
//
// Behind reverse proxies, name them in ConnsConfig.TrustedProxies (their
// connections are never reset for MaxConnsPerHost) and
// ClientsConfig.TrustedProxies, and give idem (middleware.Config.Client)
// clients.Client too.
package frontdoor
