package standardwebhooks

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/httpbody"
	"github.com/geoidem/geoidem/internal/ratelog"
)

// MaxSignatures is the most signatures a Verifier takes in
// webhook-signature, of every version, over all its fields. A sender sends
// one per key, two or three during a rotation; a request carrying more is
// refused from its headers (ErrMalformedHeaders), since each v1a signature
// costs an ed25519 verification per public key, and a header of net/http's
// default limit (1 MiB) holds over 11,000 of them: more than half a second
// of CPU per request, for the price of its headers.
const MaxSignatures = 16

// Defaults for the zero fields of VerifierConfig.
const (
	DefaultTolerance    = 5 * time.Minute
	DefaultMaxBodyBytes = 1 << 20
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
	// tolerance away from now, in the past or in the future.
	ErrTimestampOutOfTolerance = errors.New("standardwebhooks: webhook timestamp out of tolerance")
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
	// pre-signed forgery). Default DefaultTolerance (5 minutes); negative
	// is an error.
	Tolerance time.Duration

	// Now returns the current time. Default time.Now; tests pass a fake
	// clock.
	Now func() time.Time

	// MaxBodyBytes bounds the request body the Handler reads and verifies;
	// a larger body is answered 413 and next does not run. Default
	// DefaultMaxBodyBytes (1 MiB); negative is an error.
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
		if s.IsZero() {
			return nil, fmt.Errorf("standardwebhooks: VerifierConfig.Secrets[%d] is the zero Secret", i)
		}
		v.secrets = append(v.secrets, s)
	}
	for i, k := range cfg.PublicKeys {
		if k.IsZero() {
			return nil, fmt.Errorf("standardwebhooks: VerifierConfig.PublicKeys[%d] is the zero PublicKey", i)
		}
		v.publics = append(v.publics, k)
	}
	switch {
	case len(v.publics) == 0:
		v.versions = SignatureVersion
	case len(v.secrets) == 0:
		v.versions = SignatureVersionAsymmetric
	default:
		v.versions = SignatureVersion + " or " + SignatureVersionAsymmetric
	}
	switch {
	case v.tolerance < 0:
		return nil, errors.New("standardwebhooks: VerifierConfig.Tolerance must not be negative")
	case v.tolerance == 0:
		v.tolerance = DefaultTolerance
	}
	switch {
	case v.maxBody < 0:
		return nil, errors.New("standardwebhooks: VerifierConfig.MaxBodyBytes must not be negative")
	case v.maxBody == 0:
		v.maxBody = DefaultMaxBodyBytes
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
	sigs          []signature // the well-formed signatures this Verifier can check
}

// signature is one well-formed signature of webhook-signature.
type signature struct {
	version string // SignatureVersion or SignatureVersionAsymmetric
	text    string // the base64 signature, as sent (v1 compares it)
	raw     []byte // the signature decoded (v1a verifies it)
}

// Verify reports whether header and body make an authentic, fresh Standard
// Webhooks message. It returns nil when
//
//   - webhook-id, webhook-timestamp and webhook-signature are present and
//     not empty, webhook-id and webhook-timestamp once each;
//   - webhook-id is at most MaxIDLen bytes of printable ASCII (any
//     string the sender signed, full stops included, as the specification
//     has it, within what the geoidem middleware takes as a key);
//   - webhook-signature carries at most MaxSignatures signatures;
//   - webhook-timestamp is a Unix time in decimal digits at most the
//     tolerance away from now (in either direction); and
//   - at least one signature in webhook-signature (space-separated, in one
//     or several fields) verifies under a key of its version: a "v1,…"
//     signature equals [Sign] of the id, the timestamp and body under one
//     of the secrets, compared in constant time, or a "v1a,…" signature is
//     the ed25519 signature ([SignAsymmetric]) of the same content under
//     one of the public keys.
//
// Signatures of other versions, of a version the Verifier has no key for,
// tokens without a comma, and signatures that are not the standard,
// padded base64 of their version's length (32 bytes for v1, 64 for v1a)
// are ignored. Otherwise the error wraps ErrMissingHeaders,
// ErrMalformedHeaders, ErrTimestampOutOfTolerance or ErrInvalidSignature,
// checked in that order, so a stale or malformed request costs no HMAC and
// no ed25519 verification. Everything but the match itself is
// [Verifier.CheckHeaders]. body must be the raw bytes received, not
// re-serialized JSON.
//
// Verify sees no URL: a caller that uses it rather than the Handler must
// refuse a request whose URL carries a query itself (see
// VerifierConfig.AllowQuery).
func (v *Verifier) Verify(header http.Header, body []byte) error {
	m, err := v.checkHeaders(header)
	if err != nil {
		return err
	}
	return v.checkSignature(m, body)
}

// CheckHeaders runs every check of [Verifier.Verify] that needs no body:
// the three headers are present, once each where that matters, webhook-id
// is well formed, webhook-timestamp is a Unix time within the tolerance,
// and webhook-signature carries at most MaxSignatures signatures, at least
// one of them well formed and of a version this Verifier holds a key for. It returns nil when only the body
// can tell whether the request is authentic, and otherwise the error
// Verify would return, wrapping the same sentinel.
//
// It costs no HMAC and reads nothing but h. The Handler runs it, with the
// query check, before it reads the body; [Verifier.Precheck] is the same
// check as middleware. Call CheckHeaders (or put Precheck) in front of
// anything that holds resources while a body arrives, such as the
// middleware's Admission, so that unsigned or malformed traffic costs only
// its rejection:
//
//	h := verify.Precheck(admission.Handler(verify.Handler(idem.Handler(ingest))))
//
// The Handler checks the headers again, so a request that waited to be
// admitted past the tolerance is still refused.
func (v *Verifier) CheckHeaders(h http.Header) error {
	_, err := v.checkHeaders(h)
	return err
}

func (v *Verifier) checkHeaders(h http.Header) (message, error) {
	ids, stamps, sigs := nonEmpty(h.Values(HeaderID)), nonEmpty(h.Values(HeaderTimestamp)), nonEmpty(h.Values(HeaderSignature))
	var missing []string
	for _, f := range []struct {
		name string
		n    int
	}{{HeaderID, len(ids)}, {HeaderTimestamp, len(stamps)}, {HeaderSignature, len(sigs)}} {
		if f.n == 0 {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return message{}, failf(ErrMissingHeaders, "The request carries no %s header; Standard Webhooks requests carry webhook-id, webhook-timestamp and webhook-signature.", strings.Join(missing, " or "))
	}
	if len(ids) > 1 || len(stamps) > 1 {
		return message{}, failf(ErrMalformedHeaders, "The request carries webhook-id or webhook-timestamp more than once.")
	}
	m := message{id: ids[0], timestamp: stamps[0]}
	if err := checkReceivedID(m.id); err != nil {
		return message{}, err
	}
	tokens := signatureTokens(sigs, MaxSignatures+1)
	if len(tokens) > MaxSignatures {
		return message{}, failf(ErrMalformedHeaders, "The webhook-signature carries more than %d signatures.", MaxSignatures)
	}
	secs, ok := parseUnix(m.timestamp)
	if !ok {
		return message{}, failf(ErrMalformedHeaders, "The webhook-timestamp is not a Unix time in whole seconds.")
	}
	now := v.now()
	switch age := now.Sub(time.Unix(secs, 0)); {
	case age > v.tolerance:
		return message{}, failf(ErrTimestampOutOfTolerance, "The webhook-timestamp is %s in the past; at most %s is accepted. Sign every attempt afresh.", age.Truncate(time.Second), v.tolerance)
	case age < -v.tolerance:
		return message{}, failf(ErrTimestampOutOfTolerance, "The webhook-timestamp is %s in the future; at most %s is accepted.", (-age).Truncate(time.Second), v.tolerance)
	}
	for _, tok := range tokens {
		version, text, ok := strings.Cut(tok, ",")
		switch {
		case !ok:
		case version == SignatureVersion && len(v.secrets) > 0:
			if _, ok := decode(text, sha256.Size); ok {
				m.sigs = append(m.sigs, signature{version: version, text: text})
			}
		case version == SignatureVersionAsymmetric && len(v.publics) > 0:
			if raw, ok := decode(text, ed25519.SignatureSize); ok {
				m.sigs = append(m.sigs, signature{version: version, raw: raw})
			}
		}
	}
	if len(m.sigs) == 0 {
		return message{}, failf(ErrInvalidSignature, "The webhook-signature carries no well-formed %s signature.", v.versions)
	}
	return m, nil
}

// signatureTokens returns the signatures of the webhook-signature fields,
// at most limit of them: the tokens separated by spaces or tabs, the white
// space of HTTP. No other character separates them (strings.Fields would
// also split at U+00A0 and U+0085, which a field may carry), so the
// signatures counted are exactly the signatures checked, and a field of
// any size costs one pass.
func signatureTokens(fields []string, limit int) []string {
	var tokens []string
	for _, f := range fields {
		for len(f) > 0 && len(tokens) < limit {
			f = strings.TrimLeft(f, " \t")
			if f == "" {
				break
			}
			end := strings.IndexAny(f, " \t")
			if end < 0 {
				end = len(f)
			}
			tokens = append(tokens, f[:end])
			f = f[end:]
		}
	}
	return tokens
}

// checkReceivedID checks a received webhook-id: at most MaxIDLen bytes of
// printable ASCII. That is what the geoidem middleware takes as a key, so
// an id it would refuse is refused here, before the body is read. Unlike
// [Signer.SignRequest], a Verifier takes full stops and surrounding spaces:
// other senders may sign them. The error never contains the id.
func checkReceivedID(id string) error {
	if len(id) > MaxIDLen {
		return failf(ErrMalformedHeaders, "The webhook-id is %d bytes long; at most %d are accepted.", len(id), MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c > 0x7e {
			return failf(ErrMalformedHeaders, "The webhook-id has byte 0x%02x, not printable ASCII, at offset %d.", c, i)
		}
	}
	return nil
}

// decode returns the n bytes that text is the standard, padded base64
// encoding of, in its canonical form, and whether it is one.
func decode(text string, n int) ([]byte, bool) {
	if len(text) != base64.StdEncoding.EncodedLen(n) {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(text)
	return b, err == nil && len(b) == n
}

// precheck runs every check of r that needs no body: its headers
// (checkHeaders), then its URL: a query is refused unless allowed, since
// no signature covers it. A request that fails both is answered for its
// headers, so an unsigned request is a 401 with or without a query.
func (v *Verifier) precheck(r *http.Request) (message, error) {
	m, err := v.checkHeaders(r.Header)
	if err != nil {
		return message{}, err
	}
	if !v.allowQuery && r.URL.RawQuery != "" {
		return message{}, failf(errQueryNotSigned, "The request URL carries a query, which the webhook signature does not cover; deliver to the URL without one.")
	}
	return m, nil
}

// Precheck returns middleware that answers, as the Handler would and
// before any body is read, every request the Handler would refuse from
// its headers and URL alone ([Verifier.CheckHeaders], and a query unless
// AllowQuery), and passes the others on to next untouched. It does not
// verify the signature: put it in front of anything that holds resources
// while a body arrives (the middleware's Admission, say) and keep the
// Handler behind that, as [Verifier.CheckHeaders] shows.
func (v *Verifier) Precheck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := v.precheck(r); err != nil {
			v.reject(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkSignature reports whether any of m's signatures verifies under a key
// of its version. Every v1 signature is compared, in constant time, with
// the MAC under every secret; a v1a signature costs one ed25519
// verification per public key.
func (v *Verifier) checkSignature(m message, body []byte) error {
	var v1, v1a bool
	for _, sig := range m.sigs {
		v1 = v1 || sig.version == SignatureVersion
		v1a = v1a || sig.version == SignatureVersionAsymmetric
	}
	if v1 {
		for _, sec := range v.secrets {
			want := []byte(mac(sec, m.id, m.timestamp, body))
			for _, sig := range m.sigs {
				if sig.version == SignatureVersion && hmac.Equal([]byte(sig.text), want) {
					return nil
				}
			}
		}
	}
	if v1a {
		content := signedContent(m.id, m.timestamp, body)
		for _, sig := range m.sigs {
			if sig.version != SignatureVersionAsymmetric {
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
	case SignatureVersion:
		keys = "secret"
	case SignatureVersionAsymmetric:
		keys = "public key"
	default:
		keys = "secret or public key"
	}
	return failf(ErrInvalidSignature, "No %s signature in webhook-signature matches this request under any configured %s.", v.versions, keys)
}

// nonEmpty returns the values that are not empty or blank.
func nonEmpty(vals []string) []string {
	var out []string
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			out = append(out, v)
		}
	}
	return out
}

// parseUnix parses decimal digits without sign or leading zeros, so that
// the text signed is exactly the text the number formats as.
func parseUnix(s string) (int64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// Handler wraps next so that it runs only for requests whose Standard
// Webhooks signature verifies (see [Verifier.Verify]), whatever their
// method, and whose URL carries no query (unless AllowQuery). It first
// checks the headers ([Verifier.CheckHeaders]) and the URL, so a request
// refused on those costs no read of its body; then it reads the body, at
// most MaxBodyBytes of it, then checks the signature, all before next runs;
// next receives the request with its body restored (Body, ContentLength
// and GetBody over the bytes that were verified).
//
// webhook-id is an opaque string, signed byte for byte, and next must take
// it literally: `"msg_1"` (quotes included) is another message than msg_1.
// The geoidem middleware keyed by webhook-id (middleware.Config.KeyHeader)
// would read a value that starts with a quote as a structured-field string,
// and refuse a bare one with a comma; for such an id (only), next receives
// webhook-id quoted as a structured-field string ("\"msg_1\"" for
// "msg_1"), which the middleware reads back as exactly the id that was
// verified. Every other id reaches next unchanged.
//
// Rejected requests are answered with an RFC 9457 problem document
// (application/problem+json, Cache-Control: no-store), and next does not
// run:
//
//	headers missing or empty                   401 webhook-signature-missing
//	headers malformed, no signature matches    401 webhook-signature-invalid
//	timestamp more than the tolerance away     401 webhook-timestamp-out-of-tolerance
//	URL with a query, AllowQuery not set       400 webhook-query-not-signed
//	body over MaxBodyBytes                     413 body-too-large
//	body could not be read in full             400 body-unreadable
//
// 401 answers carry WWW-Authenticate: Webhook-Signature.
func (v *Verifier) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, err := v.precheck(r)
		if err != nil {
			v.reject(w, r, err)
			return
		}
		body, err := httpbody.Read(r, v.maxBody)
		if errors.Is(err, httpbody.ErrTooLarge) {
			v.refusals.Warn(r.Context(), "webhook rejected", slog.String("reason", "body_too_large"), idAttr(m.id))
			writeProblem(w, http.StatusRequestEntityTooLarge, problemBodyTooLarge, "Request body too large",
				fmt.Sprintf("The request body is larger than %d bytes.", v.maxBody))
			return
		} else if err != nil {
			v.refusals.Warn(r.Context(), "webhook rejected", slog.String("reason", "body_unreadable"), idAttr(m.id), slog.Any("error", err))
			writeProblem(w, http.StatusBadRequest, problemBodyUnreadable, "Request body unreadable",
				"The request body could not be read in full; nothing was processed, so retry.")
			return
		}
		if err := v.checkSignature(m, body); err != nil {
			v.reject(w, r, err)
			return
		}
		v.log.LogAttrs(r.Context(), slog.LevelDebug, "webhook verified", idAttr(m.id))

		r2 := r.WithContext(r.Context()) // a shallow copy; the caller's request stays as it was
		if field, changed := keyField(m.id); changed {
			r2.Header = r.Header.Clone()
			r2.Header.Set(HeaderID, field)
		}
		r2.Body = io.NopCloser(bytes.NewReader(body))
		r2.ContentLength = int64(len(body))
		r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		next.ServeHTTP(w, r2)
	})
}

func (v *Verifier) reject(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusUnauthorized
	var typ, title, reason string
	switch {
	case errors.Is(err, errQueryNotSigned):
		status, typ, title, reason = http.StatusBadRequest, ProblemQueryNotSigned, "Webhook query not signed", "query_not_signed"
	case errors.Is(err, ErrMissingHeaders):
		typ, title, reason = ProblemSignatureMissing, "Webhook signature missing", "signature_missing"
	case errors.Is(err, ErrTimestampOutOfTolerance):
		typ, title, reason = ProblemTimestampOutOfTolerance, "Webhook timestamp out of tolerance", "timestamp_out_of_tolerance"
	default: // ErrMalformedHeaders, ErrInvalidSignature
		typ, title, reason = ProblemSignatureInvalid, "Webhook signature invalid", "signature_invalid"
	}
	detail := err.Error()
	var ve *verifyError
	if errors.As(err, &ve) {
		detail = ve.detail
	}
	attrs := []slog.Attr{slog.String("reason", reason)}
	if id := r.Header.Get(HeaderID); id != "" {
		attrs = append(attrs, idAttr(id))
	}
	v.refusals.Warn(r.Context(), "webhook rejected", append(attrs, slog.String("error", err.Error()))...)
	writeProblem(w, status, typ, title, detail)
}

// idAttr is how a webhook-id is logged: as webhook_id_sha256, the
// hexadecimal SHA-256 of its bytes, never raw, since it is the idempotency
// key (compute it with `printf %s "$id" | sha256sum` to find a message).
func idAttr(id string) slog.Attr {
	sum := sha256.Sum256([]byte(id))
	return slog.String("webhook_id_sha256", hex.EncodeToString(sum[:]))
}

// keyField returns the webhook-id field value to pass on to the next
// handler, and whether it differs from id. The geoidem middleware, keyed
// by webhook-id, reads its field as an RFC 9651 structured-field string
// when it starts with a quote, and refuses a bare value with a comma or
// trims its surrounding spaces and tabs: for such an id, the value passed
// on is id quoted as a structured-field string, which the middleware reads
// back as exactly id. Any other id is passed on as it came.
func keyField(id string) (string, bool) {
	if !strings.HasPrefix(id, `"`) && !strings.ContainsRune(id, ',') && strings.Trim(id, " \t") == id {
		return id, false
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(id); i++ {
		if c := id[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(id[i])
	}
	b.WriteByte('"')
	return b.String(), true
}
