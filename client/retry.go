package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// RetryableStatus reports whether the sender retries an answer with this
// status: 408, 429, 500, 502, 503 and 504 always, and 409 when it carries a
// valid Retry-After header (hasRetryAfter), which is how the geoidem
// middleware says "the original request with this key is still running,
// come back later". Every other status is permanent. It is paired with the
// middleware's release rule: every answer it retries is one the middleware
// releases (5xx, 408, 429, 409 with Retry-After), so that the retry can
// run the handler again (contracttest's TestReleaseAndRetryRulesArePaired).
func RetryableStatus(code int, hasRetryAfter bool) bool {
	switch code {
	case http.StatusRequestTimeout,
		http.StatusTooManyRequests,
		http.StatusInternalServerError,
		http.StatusBadGateway,
		http.StatusServiceUnavailable,
		http.StatusGatewayTimeout:
		return true
	case http.StatusConflict:
		return hasRetryAfter
	}
	return false
}

// retryableError reports whether a transport error is a connection error or
// a timeout, which a retry may fix. Certificate and TLS handshake failures,
// malformed requests and redirect-policy errors are permanent. The caller
// has already ruled out the delivery's own context ending.
func retryableError(err error) bool {
	var (
		certErr     *tls.CertificateVerificationError
		unknownAuth x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		invalidErr  x509.CertificateInvalidError
		recordErr   tls.RecordHeaderError
	)
	if errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr) ||
		errors.As(err, &invalidErr) || errors.As(err, &recordErr) {
		return false
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // *url.Error is itself a net.Error; judge what it wraps
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), // the attempt's own timeout
		errors.As(err, &ne),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// inFlight reports whether an attempt was answered 409 with Retry-After,
// the geoidem middleware's "another request with this key is running":
// with a delivery deadline, such an attempt is a wait for the key, not a
// failure, and is not counted against MaxAttempts. The receiver may hold a
// key in flight for its whole lease (a release that failed, a claim whose
// reply was lost), and a sender that counted those answers would
// dead-letter a delivery that the receiver would accept a moment later.
// The deadline bounds the waiting instead; without one, they count.
func (s *Sender) inFlight(p *pending, o outcome) bool {
	return o.status == http.StatusConflict && o.hasRetryAfter && !p.deadline.IsZero()
}

// problemKeyReused ends the type of the problem document the geoidem
// middleware answers (422) to a key first used with another payload
// (docs/problems.md#key-reused).
const problemKeyReused = "#key-reused"

// keyReused reports whether an attempt was answered 422 with the
// middleware's key-reused problem document.
func keyReused(o outcome) bool {
	return o.status == http.StatusUnprocessableEntity && o.problem != nil && strings.HasSuffix(o.problem.Type, problemKeyReused)
}
