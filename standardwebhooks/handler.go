package standardwebhooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/httpbody"
)

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
// its headers and URL alone, and passes the others on to next untouched.
// It runs every check of [Verifier.Verify] that needs no body: the three
// headers are present, once each where that matters, webhook-id is well
// formed, webhook-timestamp is a Unix time no further in the past than the
// tolerance, and webhook-signature carries at most 16 signatures, at least
// one of them well formed and of a version this Verifier holds a key for;
// and it refuses a URL with a query unless AllowQuery. A timestamp ahead of
// the clock passes: whether the request is refused for now, or for good,
// depends on its signature.
//
// It costs no HMAC and reads no body. It does not verify the signature:
// put it in front of anything that holds resources while a body arrives,
// such as the front door (frontdoor.Door) or a service's own admission
// control, so that unsigned or malformed traffic costs only its rejection,
// and keep the Handler behind that:
//
//	h := verify.Precheck(door.Handler(verify.Handler(idem.Handler(ingest))))
//
// The Handler checks the headers again, so a request that waited to be
// admitted past the tolerance is still refused.
func (v *Verifier) Precheck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := v.precheck(r); err != nil {
			v.reject(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler wraps next so that it runs only for requests whose Standard
// Webhooks signature verifies (see [Verifier.Verify]), whatever their
// method, and whose URL carries no query (unless AllowQuery). It first
// checks the headers and the URL ([Verifier.Precheck]), so a request
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
//	timestamp more than the tolerance old      401 webhook-timestamp-out-of-tolerance
//	timestamp more than the tolerance ahead    503 webhook-timestamp-ahead, Retry-After
//	  (of an authentic request: the signature verifies)
//	URL with a query, AllowQuery not set       400 webhook-query-not-signed
//	body over MaxBodyBytes                     413 body-too-large
//	body could not be read in full             408 body-unreadable, Retry-After
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
				fmt.Sprintf("The request body is larger than %d bytes.", v.maxBody), 0)
			return
		} else if err != nil {
			v.refusals.Warn(r.Context(), "webhook rejected", slog.String("reason", "body_unreadable"), idAttr(m.id), slog.Any("error", err))
			writeProblem(w, http.StatusRequestTimeout, problemBodyUnreadable, "Request body unreadable",
				"The request body could not be read in full; nothing was processed, so retry after Retry-After.", unreadableRetryAfter)
			return
		}
		if err := v.authenticate(m, body); err != nil {
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
	case errors.Is(err, ErrTimestampAhead):
		status, typ, title, reason = http.StatusServiceUnavailable, ProblemTimestampAhead, "Webhook timestamp ahead", "timestamp_ahead"
	default: // ErrMalformedHeaders, ErrInvalidSignature
		typ, title, reason = ProblemSignatureInvalid, "Webhook signature invalid", "signature_invalid"
	}
	detail := err.Error()
	var retryAfter time.Duration
	var ve *verifyError
	var ae *TimestampAheadError
	switch {
	case errors.As(err, &ve):
		detail = ve.detail
	case errors.As(err, &ae):
		detail, retryAfter = ae.detail, ae.RetryAfter
	}
	attrs := []slog.Attr{slog.String("reason", reason)}
	if id := r.Header.Get(HeaderID); id != "" {
		attrs = append(attrs, idAttr(id))
	}
	v.refusals.Warn(r.Context(), "webhook rejected", append(attrs, slog.String("error", err.Error()))...)
	writeProblem(w, status, typ, title, detail, retryAfter)
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
