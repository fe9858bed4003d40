// Package contracttest is the contract suite between a receiving service
// wrapped in the geoidem [middleware] and the paired sender in package
// [client]. A receiving team points [Run] at its own wrapped handler, or at a
// running instance of its service, and the suite delivers to it with the
// sender the posting teams use, checking every rule of the contract.
//
// It is to the middleware what [testing/fstest.TestFS] is to a file system:
// one entry point, one named subtest per rule, and failures that say which
// rule broke and show the answers that broke it.
//
// # Wiring it
//
// Against the handler a team serves, wrapped exactly as in production:
//
//	func TestIdempotencyContract(t *testing.T) {
//		idem, err := middleware.New(new(memstore.Store), middleware.Config{
//			Validator: geojson.RequestValidator{},
//		})
//		if err != nil {
//			t.Fatal(err)
//		}
//		contracttest.Run(t, contracttest.Target{
//			Handler: idem.Handler(myIngestHandler),
//			Path:    "/features",
//		})
//	}
//
// Or against a service already running (on loopback, in the test):
//
//	contracttest.Run(t, contracttest.Target{URL: "http://127.0.0.1:8080", Path: "/features"})
//
// A Handler is served on a loopback [net/http/httptest.Server] of the suite's
// own, so both forms talk real HTTP. Give [Target.Executions] a counter of
// the ingest handler's executions (the work behind the middleware) and the
// suite also checks, for every rule, how often that work ran; without it the
// suite judges executions by the Idempotent-Replayed header alone.
//
// # Without testing
//
// [Check] runs the same rules without a *testing.T and returns a [Report]:
// each rule passed, failed (with the messages Run would print) or not
// applicable. The geoidem command runs it against a receiver written in
// any language:
//
//	geoidem contract -url http://127.0.0.1:8080 -path /features
//
// A receiver that verifies Standard Webhooks takes its key from the signed
// message id: give [Target.Sign] a signer, and the two key rules report
// themselves not applicable.
//
// # The rules
//
// Each is a subtest of the test that called Run, so one can be run alone
// with go test -run 'TestX/ConcurrentDuplicatesExecuteOnce':
//
//   - LostAcknowledgementIsReplayed: a proxy lets the receiver answer the
//     first attempt and then drops the connection; the sender's retry, with
//     the same key and body, is answered with Idempotent-Replayed: true and
//     the status and body the receiver answered first.
//   - ConcurrentDuplicatesExecuteOnce: 50 concurrent deliveries of one
//     payload under one key, on six connections opened beforehand so that
//     they arrive together, all end with the same status and body, and exactly
//     one of them was not a replay (409 in flight is allowed on the way: the
//     sender retries it after its Retry-After). The suite logs how many
//     attempts met 409: a receiver whose handler finishes in microseconds
//     may be done before any duplicate arrives.
//   - KeyReuseWithAnotherPayloadIs422: another payload under a used key is
//     answered 422, at once and without retries, and the first payload's
//     answer is still replayed afterwards. The 422 is an RFC 9457 problem
//     document of any type (the middleware's is key-reused), or plain JSON:
//     a receiver in another language answers in its own terms.
//   - InvalidGeometryIs422AndNotRetried: [Target.InvalidPayload] is answered
//     422 with a problem document after exactly one attempt, and the ingest
//     handler does not run. [Target.SkipInvalidGeometry] skips it, visibly,
//     for a receiver without a validator.
//   - RetryAfterIsHonoured: a proxy answers the first attempt itself, 503
//     with Retry-After in delta-seconds, and 429 with Retry-After as an
//     HTTP-date; the sender waits that long (on a fake clock: nothing really
//     waits a second), not its own backoff, and its retry with the same key
//     and body is executed once.
//   - MissingKeyIs400 and MalformedKeyIs400: a request without a key, with
//     an empty key, a control character, a key over 255 characters, a bad
//     structured-field string or two key headers, sent with plain net/http,
//     is answered 400 with a problem document, runs nothing and claims
//     nothing: the key used correctly afterwards is executed, not replayed.
//     A 400 in plain JSON (application/json, a receiver's own error format)
//     does too, for a missing key and a malformed one alike. A field that is
//     a malformed RFC 9651 string of printable ASCII ("abc unterminated, a
//     bad escape, characters after the closing quote) may also be taken as
//     a bare key, as written, quotes and all, by a receiver that reads keys
//     bare: a fresh 2xx, and the rule counts that run.
//   - ReplayCarriesNoSetCookie: a replay carries no Set-Cookie header, even
//     when the original response set a cookie.
//   - BlockedKeyIsDelivered: a key held in flight for a whole lease (a
//     release that failed, a claim whose reply was lost) is delivered, not
//     dead-lettered, by a sender with the client's default settings: a
//     proxy answers 409 request-in-flight with Retry-After: 1 until
//     [Target.Lease] has passed on the sender's clock, then forwards, and
//     the delivery must end with the receiver's fresh 2xx. The sender's
//     default Deadline must outlast the lease plus one attempt.
//
// Every problem document must be application/problem+json (RFC 9457) with a
// type, a title and a status equal to the HTTP status; the middleware's own
// answers must carry its stable type URIs ([middleware.ProblemMissingKey],
// [middleware.ProblemMalformedKey]) where a rule names one.
//
// # Outcomes
//
// [Check] reports each rule passed, failed, not applicable, or
// inconclusive: RetryAfterIsHonoured and BlockedKeyIsDelivered hold the
// paired sender to the rule and need of the receiver only a fresh 2xx
// answer, so against a receiver that never answered as a replay in the run
// (one that answers 201 to everything) they could not have failed, and do
// not count as passed; so is ReplayCarriesNoSetCookie against a receiver
// whose original answer set no cookie. Each [RuleResult] has a Title for readers without
// Go ("missing key is 400"). When every answer of the receiver was 404, or
// 401 or 403, [Report].Diagnosis says that the URL or the credentials are
// likely wrong. A Target.URL with a path and no Target.Path is the ingest
// endpoint itself.
//
// # What the suite assumes
//
// Every key the suite sends is new (random per Run), so it can share a
// store with other tests. Payloads come from [Target.NewPayload] (by
// default a GeoJSON Feature with a unique id); the receiver must accept them
// with a 2xx answer. The rules run one after another, never in parallel,
// so that Executions can be read before and after each one. Delays between
// retries are short (5 ms to 50 ms) and a server's Retry-After is waited on a
// fake clock scaled down fifty-fold, so the whole suite takes well under a
// second against an in-process receiver.
package contracttest
