package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/geoidem/geoidem/problem"
)

// DeadLetter describes a delivery that ended without success, with
// everything needed to send it again later: its Delivery, which
// [Sender.Deliver] and [Outbox.Redrive] send again under the same key,
// byte for byte, so that the receiver sees the same key and fingerprint
// as on the first attempt and answers from its record if it executed it
// then.
type DeadLetter struct {
	// Delivery is the delivery as every attempt sent it: its method and
	// content type (defaulted when it had none), its key (unencoded), its
	// exact body bytes, and its extra headers as they were before
	// Config.PrepareAttempt, which a re-drive runs again. The headers are
	// written out as they are: put credentials in the http.Client's
	// transport or in PrepareAttempt, which are never recorded.
	Delivery

	Time       time.Time        // when the sender gave up, on the sender's clock
	Attempts   int              // attempts made, 0 if none was
	LastStatus int              // status of the last answer, 0 if there was none
	Reason     string           // "permanent", "exhausted", "deadline", "retry-after-beyond-deadline", "budget", "not-journaled" or "canceled" ([DeliveryError.ReasonName])
	Error      string           // the error Deliver returned
	Problem    *problem.Details // the last answer's problem document, if any
}

// deadLetterJSON is the JSON form of a DeadLetter. The payload is embedded
// as JSON when that round-trips byte for byte, else as base64.
type deadLetterJSON struct {
	Time          time.Time        `json:"time"`
	URL           string           `json:"url"`
	Method        string           `json:"method,omitempty"`
	Key           string           `json:"key"`
	ContentType   string           `json:"content_type,omitempty"`
	Header        http.Header      `json:"header,omitempty"`
	Payload       json.RawMessage  `json:"payload,omitempty"`
	PayloadBase64 []byte           `json:"payload_base64,omitempty"`
	Attempts      int              `json:"attempts"`
	LastStatus    int              `json:"last_status,omitempty"`
	Reason        string           `json:"reason"`
	Error         string           `json:"error"`
	Problem       *problem.Details `json:"problem,omitempty"`
}

// MarshalJSON encodes the dead letter as one JSON object. The body goes
// in "payload" as embedded JSON when it is compact JSON without characters
// that encoders escape (<, >, &, U+2028, U+2029), so that it reads naturally
// and decodes to the same bytes; any other body goes in "payload_base64".
// [DeadLetter.UnmarshalJSON] restores the body exactly in both cases (an
// empty one as nil), so a dead letter can be re-sent under the same key and
// the receiver sees the same fingerprint.
func (d DeadLetter) MarshalJSON() ([]byte, error) {
	j := deadLetterJSON{
		Time: d.Time, URL: d.URL, Method: d.Method, Key: d.Key, ContentType: d.ContentType, Header: d.Header,
		Attempts: d.Attempts, LastStatus: d.LastStatus, Reason: d.Reason, Error: d.Error, Problem: d.Problem,
	}
	if embeddable(d.Body) {
		j.Payload = d.Body
	} else if len(d.Body) > 0 {
		j.PayloadBase64 = d.Body
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (d *DeadLetter) UnmarshalJSON(data []byte) error {
	var j deadLetterJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*d = DeadLetter{
		Time: j.Time, Attempts: j.Attempts, LastStatus: j.LastStatus, Reason: j.Reason, Error: j.Error, Problem: j.Problem,
	}
	d.Delivery = Delivery{URL: j.URL, Method: j.Method, Key: j.Key, ContentType: j.ContentType, Header: j.Header}
	switch {
	case j.Payload != nil:
		d.Body = []byte(j.Payload)
	case j.PayloadBase64 != nil:
		d.Body = j.PayloadBase64
	}
	return nil
}

// embeddable reports whether p can be embedded as JSON and decoded back to
// the same bytes.
func embeddable(p []byte) bool {
	if len(p) == 0 || !json.Valid(p) {
		return false
	}
	return plainJSON(p)
}

// DeadLetterSink receives every delivery that ends without success,
// permanent or exhausted. The sender calls Put once per such delivery,
// before Deliver returns, with a context that is not canceled even if the
// delivery's was (so a shutdown does not lose its dead letters). An error
// from Put is joined to the error Deliver returns. Implementations must be
// safe for concurrent use and must not keep dl.Body beyond the call
// without copying it.
type DeadLetterSink interface {
	Put(ctx context.Context, dl DeadLetter) error
}

// JSONLinesSink is a [DeadLetterSink] that writes each dead letter as one
// line of JSON (see [DeadLetter.MarshalJSON]) with a single Write call. It
// is safe for concurrent use: lines never interleave.
type JSONLinesSink struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	sync   func() error
	closed bool
}

// NewJSONLinesSink returns a sink writing to w. Close does not close w.
func NewJSONLinesSink(w io.Writer) *JSONLinesSink {
	return &JSONLinesSink{w: w}
}

// OpenJSONLinesFile opens (creating it with mode 0600 if needed) the file
// at path for appending and returns a sink writing to it. Each line is
// synced to stable storage before Put returns. Close closes the file.
func OpenJSONLinesFile(path string) (*JSONLinesSink, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("client: dead-letter file: %w", err)
	}
	return &JSONLinesSink{w: f, closer: f, sync: f.Sync}, nil
}

// errSinkClosed is returned by Put on a closed [JSONLinesSink].
var errSinkClosed = fmt.Errorf("client: dead-letter sink: %w", os.ErrClosed)

// Put writes dl as one line. It ignores ctx: a local write is not worth
// abandoning half way.
func (s *JSONLinesSink) Put(_ context.Context, dl DeadLetter) error {
	line, err := json.Marshal(dl)
	if err != nil {
		return fmt.Errorf("client: dead letter: %w", err)
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errSinkClosed
	}
	if _, err := s.w.Write(line); err != nil {
		return fmt.Errorf("client: dead letter: %w", err)
	}
	if s.sync != nil {
		if err := s.sync(); err != nil {
			return fmt.Errorf("client: dead letter: %w", err)
		}
	}
	return nil
}

// Close stops the sink; later Puts fail with an error wrapping
// [os.ErrClosed]. It closes the file opened by [OpenJSONLinesFile], and is
// a no-op the second time.
func (s *JSONLinesSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}
