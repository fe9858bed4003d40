package answer_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/geoidem/geoidem/internal/answer"
)

// TestTransportRowsAreTheRule: each transport error of the table, as the
// HTTP client reports it (wrapped in a *url.Error), is retried exactly when
// its row says so.
func TestTransportRowsAreTheRule(t *testing.T) {
	wrap := func(err error) error { return &url.Error{Op: "Post", URL: "https://receiver.test/", Err: err} }
	examples := map[string][]error{
		"connection refused":         {&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}},
		"connection reset, EOF":      {&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, io.EOF, io.ErrUnexpectedEOF, errors.New("http: server closed idle connection")},
		"stream reset (RST_STREAM)":  {errors.New("stream error: stream ID 1; INTERNAL_ERROR; received from peer")},
		"GOAWAY":                     {errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=INTERNAL_ERROR, debug=\"\"")},
		"timeout":                    {context.DeadlineExceeded, fmt.Errorf("net/http: request canceled (Client.Timeout exceeded while awaiting headers): %w", context.DeadlineExceeded)},
		"any other error":            {errors.New("something nobody classified")},
		"certificate or TLS failure": {&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, x509.HostnameError{Host: "x"}, tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, tls.AlertError(40)},
		"malformed request":          {errors.New(`net/http: invalid header field value for "X-Bad"`), errors.New(`unsupported protocol scheme "ftp"`), errors.New("http: no Host in request URL")},
		"redirect refused":           {&answer.RedirectError{Err: errors.New("stopped after 10 redirects")}},
	}
	seen := 0
	for _, r := range answer.Table {
		if r.Transport == "" {
			continue
		}
		seen++
		errs := examples[r.Transport]
		if len(errs) == 0 {
			t.Errorf("transport row %q has no example error", r.Transport)
		}
		for _, err := range errs {
			if got := answer.TransportRetried(wrap(err)); got != r.Retry {
				t.Errorf("%s: %v retried %v, the row says %v", r.Transport, err, got, r.Retry)
			}
		}
	}
	if seen != len(examples) {
		t.Errorf("%d transport rows, %d examples", seen, len(examples))
	}
}
