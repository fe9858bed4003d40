package standardwebhooks

import (
	"crypto/ed25519"
	"crypto/hmac"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/internal/answer"
	"github.com/geoidem/geoidem/internal/ratelog"
)

// maxSignatures is the most signatures a Verifier takes in
// webhook-signature, of every version, over all its fields. A sender sends
// one per key, two or three during a rotation; a request carrying more is
// refused from its headers (ErrMalformedHeaders), since each v1a signature
// costs an ed25519 verification per public key, and a header of net/http's
// default limit (1 MiB) holds over 11,000 of them: more than half a second
// of CPU per request, for the price of its headers.
const maxSignatures = 16

// Defaults for the zero fields of VerifierConfig.
const (
	defaultTolerance    = 5 * time.Minute
	defaultMaxBodyBytes = 1 << 20
)

// The errors Verify returns wrap exactly one of these; test with errors.Is.
var (
	// ErrMissingHeaders: webhook-id, webhook-timestamp or
	// webhook-signature is missing or empty.
	ErrMissingHeaders = errors.New("standardwebhooks: missing webhook headers")
	// ErrMalformedHeaders: webhook-timestamp is not a Unix time in
	// decimal, or webhook-id or webhook-timestamp is sent more than once.
	ErrMalformedHeaders = errors.New("standardwebhooks: malformed webhook headers")
	// ErrTimestampOutOfTolerance: webhook-timestamp is more than the
	// tolerance in the past.
	ErrTimestampOutOfTolerance = errors.New("standardwebhooks: webhook timestamp out of tolerance")
	// ErrTimestampAhead: the signature verifies, but webhook-timestamp is
	// more than the tolerance ahead of now. The error is a
	// [*TimestampAheadError], saying when the same request will verify.
	ErrTimestampAhead = errors.New("standardwebhooks: webhook timestamp ahead of the clock")
	// ErrInvalidSignature: webhook-signature carries no well-formed
	// signature of a version the Verifier has keys for, or none of them
	// verifies: no v1 signature matches under any of the secrets, no v1a
	// signature under any of the public keys.
	ErrInvalidSignature = errors.New("standardwebhooks: invalid webhook signature")
)

// errQueryNotSigned: the request URL carries a query and the Verifier does
// not allow one (VerifierConfig.AllowQuery).
var errQueryNotSigned = errors.New("standardwebhooks: query not covered by the signature")

// verifyError wraps one of the sentinels with a detail fit for a problem
// document.
type verifyError struct {
	kind   error
	detail string
}

func (e *verifyError) Error() string { return e.kind.Error() + ": " + e.detail }
func (e *verifyError) Unwrap() error { return e.kind }

func failf(kind error, format string, args ...any) error {
	return &verifyError{kind: kind, detail: fmt.Sprintf(format, args...)}
}

// VerifierConfig configures a Verifier. Zero fields mean the documented
// defaults.
type VerifierConfig struct {
	// Secrets are the symmetric keys a v1 signature may be made with;
	// PublicKeys are the ed25519 keys a v1a signature may verify with. A
	// request is authentic when any of its signatures verifies under any
	// key of its own version: v1 under a secret, v1a under a public key.
	// At least one secret or public key is required. During a rotation
	// list both the new and the old key, then drop the old one; a sender
	// moving from v1 to v1a is accepted throughout when both its secret
	// and its public key are listed.
	Secrets    []Secret
	PublicKeys []PublicKey

	// Tolerance is how far webhook-timestamp may be from Now, in the past
	// or in the future, before the request is rejected as a replay (or a
	// pre-signed forgery). Default 5 minutes; negative
	// is an error.
	Tolerance time.Duration

	// Now returns the current time. Default time.Now; tests pass a fake
	// clock.
	Now func() time.Time

	// MaxBodyBytes bounds the request body the Handler reads and verifies;
	// a larger body is answered 413 and next does not run. Default
	// 1 MiB; negative is an error.
	MaxBodyBytes int64

	// AllowQuery lets the Handler pass on a request whose URL carries a
	// query. By default (false) such a request is answered 400
	// webhook-query-not-signed before its body is read, because no
	// Standard Webhooks signature covers the URL: anyone who captures a
	// signed message (a proxy log, a misrouted copy) can send it again,
	// within the tolerance, with a query of their choosing, and the
	// signature still verifies. Behind the geoidem middleware, which
	// fingerprints the query with the body, that replay claims the
	// message's webhook-id under a fingerprint of its own: if it comes
	// first, it runs the handler and the genuine delivery is answered 422
	// key-reused for the whole retention; and whatever the handler reads
	// from the query is the attacker's choice. Set AllowQuery only for a
	// sender whose URL must carry a query, and then make the handler and
	// the middleware's identity ignore it (or check it against what the
	// signed body says).
	AllowQuery bool

	// Logger receives a Warn record per rejected request, at most
	// 10 a minute: the others are counted, and the
	// next record written carries their number as "suppressed", so a flood
	// of forged requests cannot flood the log. It also receives a Debug
	// record per verified request. Default: no logging. Secrets and
	// signatures are never logged, nor is the raw webhook-id (the
	// idempotency key): records carry webhook_id_sha256, its SHA-256 in
	// hexadecimal.
	Logger *slog.Logger
}

// A Verifier checks Standard Webhooks signatures. It is safe for
// concurrent use. Use [Verifier.Handler] as HTTP middleware in front of
// the idempotency middleware, or [Verifier.Verify] on a body already read.
type Verifier struct {
	secrets    []Secret
	publics    []PublicKey
	versions   string // the versions it checks, for messages: "v1", "v1a" or "v1 or v1a"
	allowQuery bool
	tolerance  time.Duration
	now        func() time.Time
	maxBody    int64
	log        *slog.Logger
	refusals   *ratelog.Logger // log, at a bounded rate
}

// NewVerifier returns a Verifier, or an error when cfg has neither a
// secret nor a public key, a zero secret or public key, or a negative
// Tolerance or MaxBodyBytes.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	if len(cfg.Secrets) == 0 && len(cfg.PublicKeys) == 0 {
		return nil, errors.New("standardwebhooks: VerifierConfig has no Secrets and no PublicKeys")
	}
	v := &Verifier{tolerance: cfg.Tolerance, now: cfg.Now, maxBody: cfg.MaxBodyBytes, log: cfg.Logger, allowQuery: cfg.AllowQuery}
	for i, s := range cfg.Secrets {
		if s.isZero() {
			return nil, fmt.Errorf("standardwebhooks: VerifierConfig.Secrets[%d] is the zero Secret", i)
		}
		v.secrets = append(v.secrets, s)
	}
	for i, k := range cfg.PublicKeys {
		if len(k.key) == 0 {
			return nil, fmt.Errorf("standardwebhooks: VerifierConfig.PublicKeys[%d] is the zero PublicKey", i)
		}
		v.publics = append(v.publics, k)
	}
	switch {
	case len(v.publics) == 0:
		v.versions = signatureVersion
	case len(v.secrets) == 0:
		v.versions = signatureVersionAsymmetric
	default:
		v.versions = signatureVersion + " or " + signatureVersionAsymmetric
	}
	switch {
	case v.tolerance < 0:
		return nil, errors.New("standardwebhooks: VerifierConfig.Tolerance must not be negative")
	case v.tolerance == 0:
		v.tolerance = defaultTolerance
	}
	switch {
	case v.maxBody < 0:
		return nil, errors.New("standardwebhooks: VerifierConfig.MaxBodyBytes must not be negative")
	case v.maxBody == 0:
		v.maxBody = defaultMaxBodyBytes
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	v.refusals = ratelog.New(v.log, 0, 0)
	return v, nil
}

// message is what the headers of one request say, once checked.
type message struct {
	id, timestamp string
	sigs          []signature   // the well-formed signatures this Verifier can check
	ahead         time.Duration // how long until the timestamp is within the tolerance; 0 when it is
}

// signature is one well-formed signature of webhook-signature.
type signature struct {
	version string // signatureVersion or signatureVersionAsymmetric
	text    string // the base64 signature, as sent (v1 compares it)
	raw     []byte // the signature decoded (v1a verifies it)
}

// Verify reports whether header and body make an authentic, fresh Standard
// Webhooks message. It returns nil when
//
//   - webhook-id, webhook-timestamp and webhook-signature are present and
//     not empty, webhook-id and webhook-timestamp once each;
//   - webhook-id is at most 255 bytes of printable ASCII (any
//     string the sender signed, full stops included, as the specification
//     has it, within what the geoidem middleware takes as a key);
//   - webhook-signature carries at most 16 signatures;
//   - webhook-timestamp is a Unix time in decimal digits at most the
//     tolerance away from now (in either direction); and
//   - at least one signature in webhook-signature (space-separated, in one
//     or several fields) verifies under a key of its version: a "v1,…"
//     signature is the base64 HMAC-SHA256 of id + "." + timestamp + "." +
//     body under one of the secrets, compared in constant time, or a
//     "v1a,…" signature is the base64 ed25519 signature of the same content
//     under one of the public keys (as [Signer.SignRequest] makes them).
//
// Signatures of other versions, of a version the Verifier has no key for,
// tokens without a comma, and signatures that are not the standard,
// padded base64 of their version's length (32 bytes for v1, 64 for v1a)
// are ignored. Otherwise the error wraps ErrMissingHeaders,
// ErrMalformedHeaders, ErrTimestampOutOfTolerance (a timestamp too far in
// the past) or ErrInvalidSignature, checked in that order, so a stale or
// malformed request costs no HMAC and no ed25519 verification; then, for
// a request whose signature verifies, ErrTimestampAhead (a
// [*TimestampAheadError]): a timestamp further ahead of now than the
// tolerance, which the same request will be within once the clock has
// caught up. Everything but the match itself is checked from the headers
// alone, as [Verifier.Precheck] does. body must be the raw bytes received,
// not re-serialized JSON.
//
// Verify sees no URL: a caller that uses it rather than the Handler must
// refuse a request whose URL carries a query itself (see
// VerifierConfig.AllowQuery).
func (v *Verifier) Verify(header http.Header, body []byte) error {
	m, err := v.checkHeaders(header)
	if err != nil {
		return err
	}
	return v.authenticate(m, body)
}

// authenticate checks m's signatures against body (checkSignature), then,
// for an authentic request, whether its timestamp is ahead of the clock:
// a [*TimestampAheadError] saying when it will not be.
func (v *Verifier) authenticate(m message, body []byte) error {
	if err := v.checkSignature(m, body); err != nil {
		return err
	}
	if m.ahead > 0 {
		return &TimestampAheadError{RetryAfter: m.ahead, detail: fmt.Sprintf(
			"The webhook-timestamp is further ahead of the receiver's clock than the %s accepted; nothing was processed. "+
				"The same request verifies in %ds (Retry-After); check the sender's clock.", v.tolerance, answer.RetryAfterSeconds(m.ahead))}
	}
	return nil
}

// checkSignature reports whether any of m's signatures verifies under a key
// of its version. Every v1 signature is compared, in constant time, with
// the MAC under every secret; a v1a signature costs one ed25519
// verification per public key.
func (v *Verifier) checkSignature(m message, body []byte) error {
	var v1, v1a bool
	for _, sig := range m.sigs {
		v1 = v1 || sig.version == signatureVersion
		v1a = v1a || sig.version == signatureVersionAsymmetric
	}
	if v1 {
		for _, sec := range v.secrets {
			want := []byte(mac(sec, m.id, m.timestamp, body))
			for _, sig := range m.sigs {
				if sig.version == signatureVersion && hmac.Equal([]byte(sig.text), want) {
					return nil
				}
			}
		}
	}
	if v1a {
		content := signedContent(m.id, m.timestamp, body)
		for _, sig := range m.sigs {
			if sig.version != signatureVersionAsymmetric {
				continue
			}
			for _, pub := range v.publics {
				if ed25519.Verify(pub.key, content, sig.raw) {
					return nil
				}
			}
		}
	}
	var keys string
	switch v.versions {
	case signatureVersion:
		keys = "secret"
	case signatureVersionAsymmetric:
		keys = "public key"
	default:
		keys = "secret or public key"
	}
	return failf(ErrInvalidSignature, "No %s signature in webhook-signature matches this request under any configured %s.", v.versions, keys)
}
