// Package standardwebhooks signs and verifies webhooks as the Standard
// Webhooks specification (https://www.standardwebhooks.com) defines them,
// so that geoidem can receive from, and send to, any conforming service.
//
// A Standard Webhooks request carries three headers:
//
//	webhook-id:        msg_p5jXN8AQM9LWM0D4loKWxJek   the same on every attempt
//	webhook-timestamp: 1614265330                     Unix seconds, fresh on every attempt
//	webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
//
// A signature covers id + "." + timestamp + "." + body, in one of two
// versions:
//
//   - "v1," followed by the base64 HMAC-SHA256 under a shared secret;
//     secrets are written "whsec_" followed by base64 ([ParseSecret]);
//   - "v1a," followed by the base64 ed25519 signature under the sender's
//     signing key, which receivers verify with its
//     public key: asymmetric, so a receiver holds nothing that can sign.
//     See "Asymmetric signatures" below for the keys.
//
// Several signatures may be sent, space-separated, of either version, while
// a key is rotated or a sender moves from v1 to v1a.
//
// Outside the standard library, the package imports only geoidem's
// internal problem writer and body reader: it adds no dependency.
//
// # Receiving
//
// A [Verifier] checks that at least one signature verifies under one of
// its keys of that signature's version: a v1 signature, compared in
// constant time, under one of its secrets (VerifierConfig.Secrets), a v1a
// signature under one of its public keys (VerifierConfig.PublicKeys).
// Several keys of either kind are accepted at once, for rotation. It also
// checks that the timestamp is within its tolerance (5 minutes by default,
// in the past or the future) of its clock. [Verifier.Handler] is plain
// func(http.Handler) http.Handler middleware: it answers 401 with an RFC
// 9457 problem document for a missing or wrong signature or a stale
// timestamp (and 400 for a URL with a query, below), and otherwise runs
// the next handler with the body, which it had to read, restored. An
// authentic request whose timestamp is further ahead than the tolerance
// is refused for now, not for good: 503 [ProblemTimestampAhead] with a
// Retry-After of when the same request will verify.
// [Verifier.Verify] checks a body already read.
//
// # Cheap checks before the body
//
// Everything but the signature's match can be checked from the headers
// alone: the three headers are there, webhook-id
// is at most 255 bytes of printable ASCII (what the middleware takes
// as a key), webhook-timestamp is a Unix time no older than the
// tolerance (one ahead of it waits for the signature: see above), and
// webhook-signature carries at most 16 signatures, at
// least one of them well formed and of a version the Verifier holds a key
// for. So a request costs at most 16 times the keys held in
// HMACs or ed25519 verifications, whatever its headers. The Handler runs
// those checks, and the query rule below, before it reads a byte of the
// body, answering as it always has (401, or 400 for the query), so
// unsigned or malformed traffic costs only its rejection, not the read of
// a slow body.
//
// Anything in front of the Handler that holds resources while a body
// arrives, the front door (frontdoor.Door) above all, or a service's own
// admission control, would still admit such traffic. Put
// [Verifier.Precheck] (those checks and the query rule, as middleware
// answering as the Handler does) in front of it, and the Handler behind
// it:
//
//	h := verify.Precheck(door.Handler(verify.Handler(idem.Handler(ingest))))
//
// # Verify before claiming the key
//
// The webhook-id is the natural idempotency key: the sender keeps it
// stable across retries, and the geoidem middleware can take its key from
// it (middleware.Config.KeyHeader). But the middleware claims a key, and
// then records whatever answer follows, as the first things it does. If it
// ran before the signature were checked, anyone who can reach the endpoint
// could send a forged request under a real sender's next id (ids are not
// secret): the forgery would claim the key, and its rejection would be
// recorded under it. The real delivery would then be answered 422
// key-reused (another payload) or replayed the forger's 401 (the same
// payload) for the whole retention, and never executed. A forger could
// burn keys and poison replays at will. So the Verifier goes outside, in
// front of, the middleware: a request whose signature does not verify is
// answered 401 before any key is claimed, and nothing is recorded for its
// id.
//
//	secret, err := standardwebhooks.ParseSecret(os.Getenv("WEBHOOK_SECRET")) // "whsec_…"
//	if err != nil { … }
//	verify, err := standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{
//		Secrets: []standardwebhooks.Secret{secret},
//	})
//	if err != nil { … }
//	idem, err := middleware.New(store, middleware.Config{
//		KeyHeader: standardwebhooks.HeaderID, // "webhook-id"
//		// Keys are per sender: one sender's ids never meet another's.
//		Scope: func(r *http.Request) string { return "acme " + middleware.DefaultScope(r) },
//	})
//	if err != nil { … }
//	http.Handle("POST /webhooks/acme", verify.Handler(idem.Handler(ingest)))
//
// A sender's id is only unique among that sender's messages; when several
// senders post to one service, give each its own Verifier (its own secret
// or public key) and route, and include the sender in the middleware's Scope, as above.
//
// # The query is not signed
//
// A signature covers id.timestamp.body and nothing of the URL. The
// middleware, though, fingerprints the query with the body, so a captured
// signed message sent again with "?x=1" would claim its webhook-id under a
// fingerprint of its own: ahead of the genuine delivery, it would run the
// handler and leave the genuine delivery a 422 key-reused for the whole
// retention. So the Verifier's Handler answers a request whose URL carries
// a query 400 [ProblemQueryNotSigned], before it reads the body and before
// anything is claimed; a sender delivers to the URL without a query.
// VerifierConfig.AllowQuery turns the refusal off, for a sender whose URL
// must carry one, with the risk its documentation spells out.
// [Verifier.Verify] sees no URL: a caller that uses it directly must refuse
// a query itself.
//
// # Sending
//
// A [Signer] sets the three headers on an outgoing request
// ([Signer.SignRequest]), with a v1 signature per secret
// (SignerConfig.Secrets) and a v1a signature per signing key
// (SignerConfig.SigningKeys). A receiver rejects a timestamp older than its
// tolerance, so a sender must re-sign every attempt: a retry that reuses
// the first attempt's signature is rejected by every conforming receiver
// once the retries outlast five minutes (a long Backoff, a Retry-After, a
// delivery re-sent from the dead letters). Call SignRequest once per
// attempt with the same id; the id stays stable, the timestamp and the
// signature are new. With the geoidem client, that is its per-attempt
// hook:
//
//	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{
//		Secrets: []standardwebhooks.Secret{secret},
//	})
//	if err != nil { … }
//	sender, err := client.New(http.DefaultClient, client.Config{
//		PrepareAttempt: func(req *http.Request, a client.Attempt) error {
//			return signer.SignRequest(req, a.Key, a.Body) // webhook-id = the idempotency key
//		},
//	})
//
// Deliver to a URL without a query: no signature covers it, and a geoidem
// Verifier refuses it unless configured otherwise.
//
// # Asymmetric signatures
//
// A v1a sender signs with a [SigningKey] and gives each receiver the
// matching [PublicKey]; nothing a receiver holds can sign. The keys are
// serialized as the specification presents them, with the encodings of
// the Standard Webhooks reference libraries:
//
//	whpk_ + base64 of the 32-byte ed25519 public key   ParsePublicKey, PublicKey.Encode
//	whsk_ + base64 of the 32-byte ed25519 seed         ParseSigningKey, SigningKey.Encode
//
// A whsk_ key is the seed (RFC 8032's 32-byte private key, what
// crypto/ed25519's PrivateKey.Seed returns and NewKeyFromSeed takes), as
// the reference Go library reads it; crypto/ed25519's 64-byte form (the
// seed followed by the public key) is refused by ParseSigningKey, which
// says so. The published reference vector verifies
// (TestSignAsymmetricMatchesPublishedVector). The parsers take the base64
// text with or without its prefix and padding, like [ParseSecret], and
// refuse a key of the other kinds by its prefix; [ParseSecret] refuses
// whsk_ and whpk_ keys.
//
//	key, err := standardwebhooks.ParsePublicKey(os.Getenv("ACME_WEBHOOK_PUBLIC_KEY")) // "whpk_…"
//	if err != nil { … }
//	verify, err := standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{
//		PublicKeys: []standardwebhooks.PublicKey{key},
//	})
//
// A sender signs with SignerConfig.SigningKeys (and may keep signing with
// its Secrets too, while its receivers move over); [GenerateSigningKey]
// makes a key. An ed25519 verification costs far more than an HMAC, so
// the Verifier checks the headers first ("Cheap checks before the body"):
// a request with no well-formed v1a signature costs none.
//
// # Problem types
//
// The Verifier's 401 answers have the types [ProblemSignatureMissing],
// [ProblemSignatureInvalid] and [ProblemTimestampOutOfTolerance], its 503
// for a timestamp ahead [ProblemTimestampAhead], and its
// 400 for a URL with a query the type [ProblemQueryNotSigned], under the
// same base URI as the middleware's problems; its 413 and 400 answers for
// the body share the middleware's body-too-large and body-unreadable types.
package standardwebhooks
