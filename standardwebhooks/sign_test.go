package standardwebhooks_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/standardwebhooks"
)

func TestSignRequestSetsTheThreeHeaders(t *testing.T) {
	clock := newClock(vectorTime.Add(900 * time.Millisecond))
	s := newSigner(t, standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{mustSecret(t, vectorSecret)}, Now: clock.Now})
	req, _ := http.NewRequest(http.MethodPost, "http://receiver.test/", nil)
	req.Header.Set(standardwebhooks.HeaderSignature, "v1,stale")
	req.Header.Add(standardwebhooks.HeaderSignature, "v1,stale-too")
	if err := s.SignRequest(req, vectorID, []byte(vectorPayload)); err != nil {
		t.Fatal(err)
	}
	want := http.Header{
		"Webhook-Id":        {vectorID},
		"Webhook-Timestamp": {vectorTimestamp},
		"Webhook-Signature": {vectorSignature}, // the published vector
	}
	for k, v := range want {
		if got := req.Header.Values(k); len(got) != 1 || got[0] != v[0] {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
}

func TestSignRequestReadsTheClockOnEveryCall(t *testing.T) {
	clock := newClock(time.Unix(1_800_000_000, 0))
	s := newSigner(t, standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{rawSecret(t, 's', 32)}, Now: clock.Now})
	req, _ := http.NewRequest(http.MethodPost, "http://receiver.test/", nil)
	req.Header = nil // a hand-made request without a header map
	if err := s.SignRequest(req, "msg_1", body); err != nil {
		t.Fatal(err)
	}
	first := req.Header.Clone()
	clock.Advance(90 * time.Second)
	if err := s.SignRequest(req, "msg_1", body); err != nil {
		t.Fatal(err)
	}
	if got, want := req.Header.Get(standardwebhooks.HeaderTimestamp), "1800000090"; got != want {
		t.Errorf("second timestamp %s, want %s", got, want)
	}
	if req.Header.Get(standardwebhooks.HeaderSignature) == first.Get(standardwebhooks.HeaderSignature) {
		t.Error("the second attempt carries the first attempt's signature")
	}
	if req.Header.Get(standardwebhooks.HeaderID) != first.Get(standardwebhooks.HeaderID) {
		t.Error("the id changed between attempts")
	}
}

func TestSignRequestRejectsBadIDs(t *testing.T) {
	s := newSigner(t, standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{rawSecret(t, 's', 32)}})
	for _, id := range []string{"", "msg.1", " msg_1", "msg_1 ", "msg\n1", "msg_ü", strings.Repeat("a", standardwebhooks.MaxIDLen+1)} {
		req, _ := http.NewRequest(http.MethodPost, "http://receiver.test/", nil)
		err := s.SignRequest(req, id, body)
		if !errors.Is(err, standardwebhooks.ErrInvalidID) {
			t.Errorf("SignRequest(%q): %v, want ErrInvalidID", id, err)
		}
		if len(req.Header) != 0 {
			t.Errorf("SignRequest(%q) failed but changed the headers: %v", id, req.Header)
		}
	}
	for _, id := range []string{"a", "msg_p5jXN8AQM9LWM0D4loKWxJek", "0f6c2a9e-7d1b-4c0e-9a55-3f2b8e1c9d00", "key with spaces", strings.Repeat("a", standardwebhooks.MaxIDLen)} {
		req, _ := http.NewRequest(http.MethodPost, "http://receiver.test/", nil)
		if err := s.SignRequest(req, id, body); err != nil {
			t.Errorf("SignRequest(%q): %v", id, err)
		}
	}
}

func TestSignRequestRejectsAClockBeforeTheEpoch(t *testing.T) {
	s := newSigner(t, standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{rawSecret(t, 's', 32)}, Now: func() time.Time { return time.Unix(-5, 0) }})
	req, _ := http.NewRequest(http.MethodPost, "http://receiver.test/", nil)
	if err := s.SignRequest(req, "msg_1", body); err == nil {
		t.Fatal("signed with a negative timestamp")
	}
}

func TestNewSignerRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]standardwebhooks.SignerConfig{
		"no secrets":  {},
		"zero secret": {Secrets: []standardwebhooks.Secret{{}}}, // a short one cannot be made: TestShortSecretsAreRefused
	} {
		if s, err := standardwebhooks.NewSigner(cfg); err == nil || s != nil {
			t.Errorf("%s: NewSigner = %v, %v; want an error", name, s, err)
		}
	}
	if _, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{rawSecret(t, 's', standardwebhooks.MinSigningSecretLen)}}); err != nil {
		t.Errorf("a secret of exactly MinSigningSecretLen bytes: %v", err)
	}
}

// TestRoundTripRetryAfterTolerance delivers one message through our Signer
// and our Verifier the way the geoidem client does, re-signing in its
// per-attempt hook: the first attempt fails, the retry comes more than
// five minutes later, re-signed, and is accepted; the first attempt's
// headers replayed that late are rejected.
func TestRoundTripRetryAfterTolerance(t *testing.T) {
	secret := rawSecret(t, 'r', 32)
	clock := newClock(time.Unix(1_800_000_000, 0))
	signer := newSigner(t, standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{secret}, Now: clock.Now})
	verifier := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{secret}, Now: clock.Now})

	var seen []string
	fail := true
	receiver := verifier.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get(standardwebhooks.HeaderID))
		if fail {
			fail = false
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	// prepare has the shape of client.Config.PrepareAttempt.
	prepare := func(req *http.Request, key string, body []byte) error { return signer.SignRequest(req, key, body) }
	attempt := func() (*http.Request, int) {
		req := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(body))
		if err := prepare(req, "delivery-42", body); err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		receiver.ServeHTTP(w, req)
		return req, w.Code
	}

	first, code := attempt()
	if code != http.StatusServiceUnavailable {
		t.Fatalf("first attempt: %d, want the handler's 503", code)
	}
	clock.Advance(5*time.Minute + 5*time.Second) // the spec's example schedule: 5 s, then 5 min
	retry, code := attempt()
	if code != http.StatusCreated {
		t.Fatalf("re-signed retry after %v: %d, want 201", 5*time.Minute+5*time.Second, code)
	}
	if len(seen) != 2 || seen[0] != "delivery-42" || seen[1] != "delivery-42" {
		t.Errorf("the handler saw ids %q, want delivery-42 twice", seen)
	}
	if a, b := first.Header.Get(standardwebhooks.HeaderTimestamp), retry.Header.Get(standardwebhooks.HeaderTimestamp); b != strconv.FormatInt(clock.Now().Unix(), 10) || a == b {
		t.Errorf("timestamps %s then %s: the retry is not signed at its own time", a, b)
	}

	// The first attempt's headers, replayed as they were: rejected.
	replay := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(body))
	replay.Header = first.Header.Clone()
	w := httptest.NewRecorder()
	receiver.ServeHTTP(w, replay)
	checkProblem(t, w, http.StatusUnauthorized, standardwebhooks.ProblemTimestampOutOfTolerance)
	if err := verifier.Verify(first.Header, body); !errors.Is(err, standardwebhooks.ErrTimestampOutOfTolerance) {
		t.Errorf("Verify of the replayed first attempt: %v, want ErrTimestampOutOfTolerance", err)
	}
	if len(seen) != 2 {
		t.Errorf("the handler ran for the late replay")
	}
}
