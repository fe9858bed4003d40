package standardwebhooks_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/internal/answer"
	"github.com/geoidem/geoidem/internal/senderclock"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// rowOf returns the row of answer.Table for the verifier's problem typ.
func rowOf(t *testing.T, typ string) answer.Row {
	t.Helper()
	name := typ[strings.IndexByte(typ, '#')+1:]
	for _, r := range answer.Table {
		if r.Problem == name {
			return r
		}
	}
	t.Fatalf("answer.Table has no row for %s", name)
	return answer.Row{}
}

// signedAt returns a request for body signed by the fixture's secret with
// the timestamp at.
func (f *handlerFixture) signedAt(id string, at time.Time, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(body))
	r.Header.Set(standardwebhooks.HeaderID, id)
	r.Header.Set(standardwebhooks.HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	r.Header.Set(standardwebhooks.HeaderSignature, standardwebhooks.Sign(f.secret, id, at, body))
	return r
}

// TestTimestampAheadIsTransient: an authentic request whose timestamp is
// further ahead of the receiver's clock than the tolerance is refused for
// now, not for good: 503 webhook-timestamp-ahead, nothing run, with a
// Retry-After of exactly when the timestamp will be within the tolerance,
// retried by the paired sender's rule; the same request then passes. It
// agrees with its row of answer.Table.
func TestTimestampAheadIsTransient(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	at := f.clock.Now().Add(6*time.Minute + 30*time.Second) // 90 s past the 5 min tolerance
	w := f.serve(f.signedAt("msg_1", at, body))
	checkProblem(t, w, http.StatusServiceUnavailable, standardwebhooks.ProblemTimestampAhead)
	if f.next.calls != 0 {
		t.Fatalf("next ran for a request ahead of the clock")
	}
	ra := w.Header().Get("Retry-After")
	if ra != "90" {
		t.Errorf("Retry-After %q, want 90 (seconds until the timestamp is within the tolerance)", ra)
	}
	if w.Header().Get("WWW-Authenticate") != "" {
		t.Error("a refusal of the clock's carries an authentication challenge")
	}
	row := rowOf(t, standardwebhooks.ProblemTimestampAhead)
	if row.Status != w.Code || row.Key != answer.NotClaimed || !row.Retry || row.RetryAfter == "" {
		t.Errorf("row %+v does not describe the answer: %d, not claimed, retried, with Retry-After", row, w.Code)
	}
	if got := answer.Retried(w.Code, ra); got != row.Retry {
		t.Errorf("the paired sender's rule retries it: %v; the row says %v", got, row.Retry)
	}

	f.clock.Advance(89 * time.Second)
	checkProblem(t, f.serve(f.signedAt("msg_1", at, body)), http.StatusServiceUnavailable, standardwebhooks.ProblemTimestampAhead)
	f.clock.Advance(time.Second)
	if w := f.serve(f.signedAt("msg_1", at, body)); w.Code != http.StatusAccepted || f.next.calls != 1 {
		t.Fatalf("the same request at Retry-After: status %d, next ran %d times; want 202 and once", w.Code, f.next.calls)
	}
}

// TestTimestampAheadOnlyWhenAuthentic: a request ahead of the clock whose
// signature does not verify is a 401 webhook-signature-invalid, as it
// always would be, not an invitation to come back.
func TestTimestampAheadOnlyWhenAuthentic(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	r := f.signedAt("msg_1", f.clock.Now().Add(time.Hour), body)
	r.Header.Set(standardwebhooks.HeaderSignature, vectorWrongSignature)
	w := f.serve(r)
	checkProblem(t, w, http.StatusUnauthorized, standardwebhooks.ProblemSignatureInvalid)
	if ra := w.Header().Get("Retry-After"); ra != "" {
		t.Errorf("a forged request ahead of the clock is told Retry-After %s", ra)
	}
}

// TestTimestampTooOldStaysPermanent: a timestamp further in the past than
// the tolerance never comes back within it: 401, no Retry-After, not
// retried, as its row says.
func TestTimestampTooOldStaysPermanent(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	w := f.serve(f.signedAt("msg_1", f.clock.Now().Add(-6*time.Minute), body))
	checkProblem(t, w, http.StatusUnauthorized, standardwebhooks.ProblemTimestampOutOfTolerance)
	row := rowOf(t, standardwebhooks.ProblemTimestampOutOfTolerance)
	if ra := w.Header().Get("Retry-After"); ra != "" || row.Retry || answer.Retried(w.Code, ra) {
		t.Errorf("a stale timestamp: Retry-After %q, row retried %v, rule retried %v; want none, false, false", ra, row.Retry, answer.Retried(w.Code, ra))
	}
}

// TestVerifyTimestampAhead: Verify reports a timestamp ahead as
// ErrTimestampAhead (not ErrTimestampOutOfTolerance), with how long until it
// verifies, and only once the signature matches; CheckHeaders leaves it to
// the body (only the signature can tell whether it is authentic).
func TestVerifyTimestampAhead(t *testing.T) {
	sec := rawSecret(t, 's', 32)
	now := time.Unix(1_800_000_000, 250_000_000)
	clock := newClock(now)
	v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{sec}, Now: clock.Now})
	at := time.Unix(1_800_000_000+301, 0) // 300.75 s ahead: 0.75 s past the tolerance
	h := headers("msg_1", strconv.FormatInt(at.Unix(), 10), standardwebhooks.Sign(sec, "msg_1", at, body))
	err := v.Verify(h, body)
	var ae *standardwebhooks.TimestampAheadError
	if !errors.Is(err, standardwebhooks.ErrTimestampAhead) || errors.Is(err, standardwebhooks.ErrTimestampOutOfTolerance) || !errors.As(err, &ae) {
		t.Fatalf("Verify: %v, want a *TimestampAheadError wrapping ErrTimestampAhead only", err)
	}
	if ae.RetryAfter != 750*time.Millisecond {
		t.Errorf("RetryAfter %v, want 750ms", ae.RetryAfter)
	}
	if err := v.CheckHeaders(h); err != nil {
		t.Errorf("CheckHeaders: %v, want nil: only the body tells whether it is authentic", err)
	}
	if err := v.Verify(headers("msg_1", strconv.FormatInt(at.Unix(), 10), vectorWrongSignature), body); !errors.Is(err, standardwebhooks.ErrInvalidSignature) {
		t.Errorf("Verify of a forgery ahead of the clock: %v, want ErrInvalidSignature", err)
	}
	clock.Advance(750 * time.Millisecond)
	if err := v.Verify(h, body); err != nil {
		t.Errorf("Verify after RetryAfter: %v", err)
	}
}

// senderClock is the sender's clock (set with senderclock.Set), whose Sleep advances the receiver's fake
// clock: the sender waits on the receiver's time.
type senderClock struct{ c *fakeClock }

func (s senderClock) Now() time.Time { return s.c.Now() }
func (s senderClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.c.Advance(d)
	return nil
}

// TestPairedSenderRetriesTimestampAhead: the paired sender retries the
// 503 at its Retry-After, and a delivery whose timestamp was stamped ahead
// of the receiver's clock (a sender that signs once, when it enqueues) is
// delivered at the second attempt, not dead-lettered.
func TestPairedSenderRetriesTimestampAhead(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	at := f.clock.Now().Add(6 * time.Minute)
	var attempts []client.Attempt
	cfg := client.Config{
		PrepareAttempt: func(req *http.Request, _ client.Attempt) error {
			req.Header.Set(standardwebhooks.HeaderID, "msg_1")
			req.Header.Set(standardwebhooks.HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
			req.Header.Set(standardwebhooks.HeaderSignature, standardwebhooks.Sign(f.secret, "msg_1", at, body))
			return nil
		},
		OnAttempt: func(a client.Attempt) { attempts = append(attempts, a) },
	}
	senderclock.Set(&cfg, senderClock{f.clock})
	s, err := client.New(srv.Client(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Deliver(context.Background(), client.Delivery{URL: srv.URL, Key: "msg_1", Body: body})
	if err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("Deliver: %+v, %v; want 202", res, err)
	}
	if len(attempts) != 2 || attempts[0].StatusCode != http.StatusServiceUnavailable || !attempts[0].FromRetryAfter || attempts[0].Delay != time.Minute {
		t.Errorf("attempts %+v, want a 503 waited out for its Retry-After (1m), then the 202", attempts)
	}
}
