// Package frontdoor bounds what a public HTTP receiver spends below the
// request layer, where middleware.Admission cannot see: connections, and
// request bodies that arrive too slowly. Admission bounds the requests in
// flight and each client's share of them; without a front door, a few
// addresses still shut everyone else out (issue 35, against
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
// A [Conns] bounds the connections before any request exists. Its
// [Conns.Listener] keeps at most MaxConns open (Accept waits, through
// golang.org/x/net/netutil.LimitListener) and at most MaxConnsPerHost from
// one host (an IPv4 address or an IPv6 /64): a connection past that is
// closed as soon as it is accepted, with a reset, before net/http spends a
// goroutine or a buffer on it. Its [Conns.ConnState] keeps the connections
// that wait for a request (new, or idle between keep-alive requests) to
// MaxIdle, closing the one that has waited longest. So 20,000 idle
// connections cost what MaxConns connections cost at most (about 36 MB at
// the default 1024), and a new connection, /healthz's, is served.
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
// The two work together: the per-host bound is what keeps a few addresses
// from holding every admission slot, and the rate is what makes each slot
// a slow body holds come back within seconds. Against Admission's default
// 64 slots, 8 connections per host leave a sender room while up to seven
// hosts send slow bodies; eight hosts hold all 64 again, each slot for
// Grace + length/MinRate (5.1 s for 100 bytes at the defaults) before it
// is cut off and, by an attacker that connects again at once, retaken,
// unless the Admission may cut bodies off to make room ([CutBody] as
// middleware.AdmissionConfig.CutBody): then a client that holds less than
// another gets in, the other's oldest slow body answered 408. Many hosts
// holding one slot each can still hold every slot.
//
// # Wiring
//
// BodyRate goes outside Admission (nothing else between them, so that
// BodyDeadline finds its body), Admission outside everything that reads a
// body (a signature verifier, the idempotency middleware); the Conns goes
// around the listener and into the http.Server:
//
//	conns, err := frontdoor.NewConns(frontdoor.ConnsConfig{})
//	...
//	rate, err := frontdoor.NewBodyRate(frontdoor.BodyRateConfig{})
//	...
//	admit, err := middleware.NewAdmission(middleware.AdmissionConfig{
//		BodyDeadline: frontdoor.BodyDeadline,
//		CutBody:      frontdoor.CutBody,
//	})
//	...
//	mux.Handle("POST /features", rate.Handler(admit.Handler(idem.Handler(ingest))))
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
// Behind a reverse proxy every connection comes from the proxy: set
// ConnsConfig.MaxConnsPerHost negative there and bound hosts at the proxy
// (and give Admission a Client that names the real client).
package frontdoor
