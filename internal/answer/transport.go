package answer

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"strings"
)

// TransportRetried reports whether a sender retries after the transport
// error err, an attempt that got no answer (or lost it on the way):
// always, a connection refused or reset, an EOF, a timeout, an HTTP/2
// stream reset or GOAWAY, and any error it does not know, except the known
// permanent ones, which no retry can fix: a certificate or TLS failure, a
// request net/http refuses to send (malformed), and a redirect the
// client's policy refused (a [*RedirectError]). A retry is safe whatever
// happened: the receiver answers it from its record if the attempt ran,
// and runs it if the attempt's claim was released or never made. The
// caller rules out its own context ending first.
func TransportRetried(err error) bool {
	var (
		certErr     *tls.CertificateVerificationError
		unknownAuth x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		invalidErr  x509.CertificateInvalidError
		recordErr   tls.RecordHeaderError
		alert       tls.AlertError
		redirect    *RedirectError
	)
	switch {
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr),
		errors.As(err, &invalidErr), errors.As(err, &recordErr), errors.As(err, &alert):
		return false
	case errors.As(err, &redirect):
		return false
	case malformed(err):
		return false
	}
	return true
}

// RedirectError is the error of a redirect the client's policy refused
// (its CheckRedirect, or net/http's default limit of 10), as package
// client marks it: permanent, the same request meets the same redirects.
type RedirectError struct{ Err error }

func (e *RedirectError) Error() string { return e.Err.Error() }
func (e *RedirectError) Unwrap() error { return e.Err }

// malformedPrefixes begin the errors net/http gives a request it refuses to
// send, which it does not export: a malformed header, method or URL.
var malformedPrefixes = []string{
	"net/http: invalid header field",
	"net/http: invalid method",
	"net/http: invalid trailer",
	"net/http: nil Request",
	"unsupported protocol scheme",
	"http: no Host in request URL",
	"http2: invalid header field",
	"http2: invalid pseudo-header",
	"http2: invalid request header",
	"http2: invalid Connection request header",
	"http2: invalid Upgrade request header",
	"http2: invalid Transfer-Encoding",
}

// malformed reports whether err is net/http's refusal of a malformed
// request.
func malformed(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	for _, p := range malformedPrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
