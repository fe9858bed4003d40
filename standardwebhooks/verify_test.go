package standardwebhooks_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/standardwebhooks"
)

var body = []byte(`{"type":"Feature","id":"f1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`)

func TestVerifyRotationAnyOfSeveralSecrets(t *testing.T) {
	oldS, newS, otherS := rawSecret(t, 'o', 32), rawSecret(t, 'n', 32), rawSecret(t, 'x', 32)
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	v := newVerifier(t, standardwebhooks.VerifierConfig{
		Secrets: []standardwebhooks.Secret{newS, oldS},
		Now:     func() time.Time { return now },
	})
	for _, tt := range []struct {
		name string
		sig  string
		ok   bool
	}{
		{"signed with the new secret", standardwebhooks.Sign(newS, "msg_1", now, body), true},
		{"signed with the old secret", standardwebhooks.Sign(oldS, "msg_1", now, body), true},
		{"signed with another secret", standardwebhooks.Sign(otherS, "msg_1", now, body), false},
		{"other secret first, then old", standardwebhooks.Sign(otherS, "msg_1", now, body) + " " + standardwebhooks.Sign(oldS, "msg_1", now, body), true},
		{"extra spaces between signatures", "  " + standardwebhooks.Sign(otherS, "msg_1", now, body) + "   " + standardwebhooks.Sign(newS, "msg_1", now, body) + " ", true},
	} {
		err := v.Verify(headers("msg_1", ts, tt.sig), body)
		if tt.ok && err != nil {
			t.Errorf("%s: %v, want success", tt.name, err)
		}
		if !tt.ok && !errors.Is(err, standardwebhooks.ErrInvalidSignature) {
			t.Errorf("%s: %v, want ErrInvalidSignature", tt.name, err)
		}
	}

	// A verifier that knows only one of the two secrets accepts a request
	// signed by a Signer that is rotating (both signatures sent).
	signer := newSigner(t, standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{newS, oldS}, Now: func() time.Time { return now }})
	req, _ := http.NewRequest(http.MethodPost, "http://receiver.test/", nil)
	if err := signer.SignRequest(req, "msg_2", body); err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(req.Header.Get(standardwebhooks.HeaderSignature))); n != 2 {
		t.Fatalf("a Signer with two secrets sent %d signatures, want 2", n)
	}
	for _, only := range []standardwebhooks.Secret{newS, oldS} {
		v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{only}, Now: func() time.Time { return now }})
		if err := v.Verify(req.Header, body); err != nil {
			t.Errorf("verifier with one of the rotating secrets: %v", err)
		}
	}
	v = newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{otherS}, Now: func() time.Time { return now }})
	if err := v.Verify(req.Header, body); !errors.Is(err, standardwebhooks.ErrInvalidSignature) {
		t.Errorf("verifier with neither secret: %v, want ErrInvalidSignature", err)
	}
}

func TestVerifySignatureInAnyHeaderField(t *testing.T) {
	sec := rawSecret(t, 's', 32)
	now := time.Unix(1_800_000_000, 0)
	h := headers("msg_1", strconv.FormatInt(now.Unix(), 10), "v1,bm90IGl0")
	h.Add(standardwebhooks.HeaderSignature, standardwebhooks.Sign(sec, "msg_1", now, body))
	v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{sec}, Now: func() time.Time { return now }})
	if err := v.Verify(h, body); err != nil {
		t.Fatalf("a valid signature in the second webhook-signature field: %v", err)
	}
}

func TestVerifyToleranceBothWays(t *testing.T) {
	sec := rawSecret(t, 's', 32)
	signedAt := time.Unix(1_800_000_000, 0)
	h := headers("msg_1", strconv.FormatInt(signedAt.Unix(), 10), standardwebhooks.Sign(sec, "msg_1", signedAt, body))
	for _, tt := range []struct {
		tolerance time.Duration // 0: the default
		skew      time.Duration // now - signedAt
		ok        bool
	}{
		{0, 0, true},
		{0, 5 * time.Minute, true}, // exactly the tolerance: accepted
		{0, 5*time.Minute + time.Nanosecond, false},
		{0, 6 * time.Minute, false},
		{0, -5 * time.Minute, true},
		{0, -5*time.Minute - time.Nanosecond, false},
		{0, -6 * time.Minute, false},
		{30 * time.Second, 30 * time.Second, true},
		{30 * time.Second, 31 * time.Second, false},
		{30 * time.Second, -31 * time.Second, false},
		{time.Hour, 59 * time.Minute, true},
	} {
		clock := newClock(signedAt.Add(tt.skew))
		v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{sec}, Tolerance: tt.tolerance, Now: clock.Now})
		err := v.Verify(h, body)
		if tt.ok && err != nil {
			t.Errorf("tolerance %v, now %v after signing: %v, want success", tt.tolerance, tt.skew, err)
		}
		want := standardwebhooks.ErrTimestampOutOfTolerance // stale
		if tt.skew < 0 {
			want = standardwebhooks.ErrTimestampAhead // ahead of the clock
		}
		if !tt.ok && !errors.Is(err, want) {
			t.Errorf("tolerance %v, now %v after signing: %v, want %v", tt.tolerance, tt.skew, err, want)
		}
	}
}

func TestVerifyMissingHeaders(t *testing.T) {
	sec := rawSecret(t, 's', 32)
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := standardwebhooks.Sign(sec, "msg_1", now, body)
	v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{sec}, Now: func() time.Time { return now }})
	for _, tt := range []struct {
		name string
		h    http.Header
		want string // a header the error must name
	}{
		{"no headers", http.Header{}, "webhook-id"},
		{"no id", headers("", ts, sig), "webhook-id"},
		{"no timestamp", headers("msg_1", "", sig), "webhook-timestamp"},
		{"no signature", headers("msg_1", ts, ""), "webhook-signature"},
		{"blank signature", http.Header{"Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {"  "}}, "webhook-signature"},
		{"empty id", http.Header{"Webhook-Id": {""}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig}}, "webhook-id"},
	} {
		err := v.Verify(tt.h, body)
		if !errors.Is(err, standardwebhooks.ErrMissingHeaders) {
			t.Errorf("%s: %v, want ErrMissingHeaders", tt.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %q does not name %s", tt.name, err, tt.want)
		}
	}
	// Sanity: the complete set verifies, so the cases above fail for the
	// missing header alone.
	if err := v.Verify(headers("msg_1", ts, sig), body); err != nil {
		t.Fatalf("complete headers: %v", err)
	}
}

func TestVerifyMalformedHeaders(t *testing.T) {
	sec := rawSecret(t, 's', 32)
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{sec}, Now: func() time.Time { return now }})
	// Each of these carries a signature computed over exactly the header
	// texts sent, so only the header's form can make it fail.
	for _, tt := range []struct{ name, id, ts string }{
		{"signed timestamp", "msg_1", "+" + ts},
		{"leading zero", "msg_1", "0" + ts},
		{"fractional timestamp", "msg_1", ts + ".5"},
		{"negative timestamp", "msg_1", "-" + ts},
		{"not a number", "msg_1", "yesterday"},
		{"out of int64 range", "msg_1", "99999999999999999999"},
	} {
		sig := "v1," + macOf(sec, tt.id+"."+tt.ts+"."+string(body))
		err := v.Verify(headers(tt.id, tt.ts, sig), body)
		if !errors.Is(err, standardwebhooks.ErrMalformedHeaders) {
			t.Errorf("%s: %v, want ErrMalformedHeaders", tt.name, err)
		}
	}
	sig := standardwebhooks.Sign(sec, "msg_1", now, body)
	for _, name := range []string{standardwebhooks.HeaderID, standardwebhooks.HeaderTimestamp} {
		h := headers("msg_1", ts, sig)
		h.Add(name, h.Get(name))
		if err := v.Verify(h, body); !errors.Is(err, standardwebhooks.ErrMalformedHeaders) {
			t.Errorf("%s sent twice: %v, want ErrMalformedHeaders", name, err)
		}
	}
}

func TestVerifyErrorsAreDistinct(t *testing.T) {
	sentinels := []error{standardwebhooks.ErrMissingHeaders, standardwebhooks.ErrMalformedHeaders, standardwebhooks.ErrTimestampOutOfTolerance, standardwebhooks.ErrTimestampAhead, standardwebhooks.ErrInvalidSignature}
	for i, a := range sentinels {
		if !strings.HasPrefix(a.Error(), "standardwebhooks: ") {
			t.Errorf("%q lacks the package prefix", a)
		}
		for j, b := range sentinels {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v is %v", a, b)
			}
		}
	}
}

func TestNewVerifierRejectsBadConfig(t *testing.T) {
	sec := rawSecret(t, 's', 32)
	for name, cfg := range map[string]standardwebhooks.VerifierConfig{
		"no secrets":            {},
		"zero secret":           {Secrets: []standardwebhooks.Secret{sec, {}}},
		"negative tolerance":    {Secrets: []standardwebhooks.Secret{sec}, Tolerance: -time.Second},
		"negative MaxBodyBytes": {Secrets: []standardwebhooks.Secret{sec}, MaxBodyBytes: -1},
	} {
		if v, err := standardwebhooks.NewVerifier(cfg); err == nil || v != nil {
			t.Errorf("%s: NewVerifier = %v, %v; want an error", name, v, err)
		}
	}
	// A secret shorter than MinSigningSecretLen cannot be made at all:
	// TestShortSecretsAreRefused.
}

func TestVerifierUsesTheRealClockByDefault(t *testing.T) {
	sec := rawSecret(t, 's', 32)
	v := newVerifier(t, standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{sec}})
	now := time.Now()
	h := headers("msg_1", strconv.FormatInt(now.Unix(), 10), standardwebhooks.Sign(sec, "msg_1", now, body))
	if err := v.Verify(h, body); err != nil {
		t.Fatalf("signed now, verified now: %v", err)
	}
	old := now.Add(-time.Hour)
	h = headers("msg_1", strconv.FormatInt(old.Unix(), 10), standardwebhooks.Sign(sec, "msg_1", old, body))
	if err := v.Verify(h, body); !errors.Is(err, standardwebhooks.ErrTimestampOutOfTolerance) {
		t.Fatalf("signed an hour ago: %v, want ErrTimestampOutOfTolerance", err)
	}
}
