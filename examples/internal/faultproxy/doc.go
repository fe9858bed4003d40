// Package faultproxy is a fault-injecting HTTP reverse proxy on loopback,
// for putting between webhook senders and a receiver to prove that
// exactly-once delivery survives a bad network. It is seeded: a run with
// the same [Config.Seed] whose requests arrive in the same order injects the
// same faults.
//
// # Faults
//
// For each request the proxy reads, it decides one [Fault]:
//
//	None       forward, relay the answer
//	LostAck    forward, read the target's whole answer, then reset the
//	           client's connection: the work is done, the sender sees a
//	           network error and no answer
//	Inject503  answer 503 with Retry-After, without forwarding
//	Inject429  answer 429 with Retry-After, without forwarding
//	Reset      reset the client's connection, without forwarding
//	Delay      hold the request (DelayRequest) or the answer (DelayResponse)
//	           for Config.DelayFor; a held request is forwarded even when
//	           the sender has given up meanwhile, so it can reach the
//	           receiver after the sender's retry
//	Down       while the proxy is down (Proxy.SetDown): reset, not forwarded
//
// The fault of request number n (1 for the first request, counting every
// request the proxy reads) comes from [Config.Schedule] if n is in it, and
// otherwise from a math/rand/v2 PCG source seeded with (Seed, n) against
// the Config's probabilities. So the fault sequence depends on the seed and
// the arrival order only, not on how requests overlap in time. Injected
// answers carry [HeaderFault], and Retry-After in delta-seconds or as an
// IMF-fixdate taken from [Config.Now] ([RetryAfterForm]). A reset is a
// hijacked connection closed with SO_LINGER 0, so the client reads a TCP
// RST.
//
// [Proxy.SetConfig], [Proxy.Pause], [Proxy.Resume] and [Proxy.SetDown]
// change the faults while the proxy runs; [Proxy.Stats] counts what it did.
//
// # Lifetime
//
// [Proxy.Close] ends every delay and forward at once and waits for every
// request in progress, so nothing outlives it. [Proxy.Shutdown] first lets
// the requests in progress finish (held requests reach the target), then
// closes: use it at the end of a run, before checking the target. The
// proxy listens on 127.0.0.1 only and forwards only to a loopback target.
//
// # Re-sends by net/http
//
// net/http's Transport re-sends a request on its own when a reused
// keep-alive connection fails before any byte of an answer and the request
// is replayable, which includes a POST carrying Idempotency-Key with a
// rewindable body. A LostAck, Reset or Down on a reused connection is then
// re-sent once, on a fresh connection, as a new request with the next
// number; the sender does not see it as an attempt. [Stats.Requests]
// counts both. Give the senders' Transport DisableKeepAlives to make every
// fault reach the sender.
//
// # Example
//
//	p, err := faultproxy.New(receiverURL, faultproxy.Config{
//		Seed:      42,
//		LostAck:   0.10,
//		Inject503: 0.05,
//		Inject429: 0.05,
//		Reset:     0.05,
//		Delay:     0.05,
//		DelayFor:  3 * time.Second, // past the senders' attempt timeout
//	})
//	if err != nil {
//		return err
//	}
//	defer p.Close()
//	proxyURL, err := p.Start() // "http://127.0.0.1:port"
//	if err != nil {
//		return err
//	}
//	// ... run the senders against proxyURL ...
//	p.Pause() // stop injecting; let retries settle
//	// ... wait for the senders ...
//	if err := p.Shutdown(ctx); err != nil { // held requests land first
//		return err
//	}
//	st := p.Stats()
//	fmt.Println(st.Requests, st.LostAck, st.Forwarded)
package faultproxy
