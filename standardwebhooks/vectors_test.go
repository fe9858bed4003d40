package standardwebhooks_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/standardwebhooks"
)

func TestSignMatchesPublishedVector(t *testing.T) {
	for _, s := range []string{vectorSecret, vectorRawSecret} {
		got := standardwebhooks.Sign(mustSecret(t, s), vectorID, vectorTime, []byte(vectorPayload))
		if got != vectorSignature {
			t.Errorf("Sign with secret %q… = %s, want the published %s", s[:8], got, vectorSignature)
		}
	}
	// The timestamp is signed in whole seconds, as the header carries it.
	got := standardwebhooks.Sign(mustSecret(t, vectorSecret), vectorID, vectorTime.Add(999*time.Millisecond), []byte(vectorPayload))
	if got != vectorSignature {
		t.Errorf("Sign with a sub-second timestamp = %s, want %s", got, vectorSignature)
	}
}

func TestIndependentHMACMatchesVector(t *testing.T) {
	// Guards the helper the other tests build signatures with.
	got := "v1," + macOf(mustSecret(t, vectorSecret), vectorID+"."+vectorTimestamp+"."+vectorPayload)
	if got != vectorSignature {
		t.Fatalf("independent HMAC = %s, want %s", got, vectorSignature)
	}
}

func TestVerifyPublishedVector(t *testing.T) {
	secret := mustSecret(t, vectorSecret)
	tests := []struct {
		name    string
		id, ts  string
		sig     string
		payload string
		want    error // nil: verifies
	}{
		{"the vector", vectorID, vectorTimestamp, vectorSignature, vectorPayload, nil},
		{"tampered payload", vectorID, vectorTimestamp, vectorSignature, `{"test": 2432232315}`, standardwebhooks.ErrInvalidSignature},
		{"payload re-serialized", vectorID, vectorTimestamp, vectorSignature, `{"test":2432232314}`, standardwebhooks.ErrInvalidSignature},
		{"tampered id", "msg_p5jXN8AQM9LWM0D4loKWxJeK", vectorTimestamp, vectorSignature, vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"tampered timestamp", vectorID, "1614265331", vectorSignature, vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"wrong signature", vectorID, vectorTimestamp, vectorWrongSignature, vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"partial signature", vectorID, vectorTimestamp, "v1,", vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"signature without its last byte", vectorID, vectorTimestamp, vectorSignature[:len(vectorSignature)-1], vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"right MAC under another version", vectorID, vectorTimestamp, "v2," + vectorSignature[3:], vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"right MAC under v1a", vectorID, vectorTimestamp, "v1a," + vectorSignature[3:], vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"no version", vectorID, vectorTimestamp, vectorSignature[3:], vectorPayload, standardwebhooks.ErrInvalidSignature},
		// "valid multi sig is valid" in the reference tests.
		{"several signatures, one valid", vectorID, vectorTimestamp, strings.Join([]string{
			vectorWrongSignature, "v2," + vectorWrongSignature[3:], vectorSignature, vectorWrongSignature,
		}, " "), vectorPayload, nil},
		{"several signatures, none valid", vectorID, vectorTimestamp, vectorWrongSignature + " v1a,abc " + vectorWrongSignature, vectorPayload, standardwebhooks.ErrInvalidSignature},
	}
	v := newVerifier(t, standardwebhooks.VerifierConfig{
		Secrets: []standardwebhooks.Secret{secret},
		Now:     func() time.Time { return vectorTime.Add(10 * time.Second) },
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Verify(headers(tt.id, tt.ts, tt.sig), []byte(tt.payload))
			if tt.want == nil && err != nil {
				t.Fatalf("Verify: %v, want success", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Verify: %v, want an error wrapping %v", err, tt.want)
			}
		})
	}
}

func TestVerifyVectorWithUnprefixedSecret(t *testing.T) {
	v := newVerifier(t, standardwebhooks.VerifierConfig{
		Secrets: []standardwebhooks.Secret{mustSecret(t, vectorRawSecret)},
		Now:     func() time.Time { return vectorTime },
	})
	if err := v.Verify(vectorHeaders(), []byte(vectorPayload)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestVectorOutsideTolerance(t *testing.T) {
	// "old timestamp fails" / "new timestamp fails" in the reference tests,
	// on a fake clock.
	for _, d := range []time.Duration{-5*time.Minute - time.Second, 5*time.Minute + time.Second, -24 * time.Hour, 5 * 365 * 24 * time.Hour} {
		v := newVerifier(t, standardwebhooks.VerifierConfig{
			Secrets: []standardwebhooks.Secret{mustSecret(t, vectorSecret)},
			Now:     func() time.Time { return vectorTime.Add(d) },
		})
		err := v.Verify(vectorHeaders(), []byte(vectorPayload))
		want := standardwebhooks.ErrTimestampOutOfTolerance // the clock is past the timestamp
		if d < 0 {
			want = standardwebhooks.ErrTimestampAhead // the clock is behind: the vector verifies once it catches up
		}
		if !errors.Is(err, want) {
			t.Errorf("verifying %v from the vector's timestamp: %v, want %v", d, err, want)
		}
	}
}

func TestParseSecret(t *testing.T) {
	want := standardwebhooks.Sign(mustSecret(t, vectorSecret), "id", vectorTime, nil)
	for _, s := range []string{
		vectorSecret,
		vectorRawSecret,
		"  " + vectorSecret + "\n",
		"whsec_c2VjcmV0LW9mLWEtcm90YXRlZC1lbmRwb2ludA==",
		"whsec_c2VjcmV0LW9mLWEtcm90YXRlZC1lbmRwb2ludA", // unpadded
	} {
		sec, err := standardwebhooks.ParseSecret(s)
		if err != nil {
			t.Errorf("ParseSecret(%q): %v", s, err)
			continue
		}
		if strings.Contains(s, "MfKQ") {
			if got := standardwebhooks.Sign(sec, "id", vectorTime, nil); got != want {
				t.Errorf("ParseSecret(%q) is another key than the vector's", s)
			}
		}
	}
	if _, err := standardwebhooks.ParseSecret("whpk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"); err == nil || !strings.Contains(err.Error(), "asymmetric") {
		t.Errorf("ParseSecret of a public key: %v, want an error saying asymmetric keys are not supported", err)
	}
	padded, unpadded := mustSecret(t, "whsec_c2VjcmV0LW9mLWEtcm90YXRlZC1lbmRwb2ludA=="), mustSecret(t, "c2VjcmV0LW9mLWEtcm90YXRlZC1lbmRwb2ludA")
	if padded.Encode() != unpadded.Encode() || padded.Encode() != "whsec_c2VjcmV0LW9mLWEtcm90YXRlZC1lbmRwb2ludA==" {
		t.Errorf("padded and unpadded forms decode differently: %q, %q", padded.Encode(), unpadded.Encode())
	}
	for _, s := range []string{"", "whsec_", "   ", "whsec_not base64!", "whsec_****", "whpk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		_, err := standardwebhooks.ParseSecret(s)
		if !errors.Is(err, standardwebhooks.ErrInvalidKey) {
			t.Errorf("ParseSecret(%q): %v, want ErrInvalidKey", s, err)
		}
		if err != nil && len(s) > 8 && strings.Contains(err.Error(), s[6:]) {
			t.Errorf("ParseSecret(%q) echoes the secret: %v", s, err)
		}
	}
}

func TestSecretEncodeRoundTripAndRedaction(t *testing.T) {
	sec := mustSecret(t, vectorSecret)
	if got := sec.Encode(); got != vectorSecret {
		t.Errorf("Encode = %q, want %q", got, vectorSecret)
	}
	gen := standardwebhooks.GenerateSecret()
	back := mustSecret(t, gen.Encode())
	if back.Encode() != gen.Encode() || !strings.HasPrefix(gen.Encode(), "whsec_") {
		t.Errorf("GenerateSecret does not round-trip: %q → %q", gen.Encode(), back.Encode())
	}
	if standardwebhooks.GenerateSecret().Encode() == gen.Encode() {
		t.Error("GenerateSecret returned the same secret twice")
	}
	if _, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{gen}}); err != nil {
		t.Errorf("a generated secret is not good enough for signing: %v", err)
	}
	for _, f := range []string{sec.String(), sec.GoString()} {
		if strings.Contains(f, "MfKQ") || !strings.Contains(f, "redacted") {
			t.Errorf("formatted secret %q is not redacted", f)
		}
	}
	var zero standardwebhooks.Secret
	if zero.Encode() != "" || zero.String() != "standardwebhooks.Secret(none)" {
		t.Error("Encode or String wrong for the zero Secret")
	}
	if _, err := standardwebhooks.NewSecret(nil); !errors.Is(err, standardwebhooks.ErrInvalidKey) {
		t.Errorf("NewSecret(nil): %v, want ErrInvalidKey", err)
	}
	// NewSecret copies its argument.
	key := []byte("0123456789abcdef0123456789abcdef")
	s1, _ := standardwebhooks.NewSecret(key)
	before := s1.Encode()
	key[0] = 'X'
	if s1.Encode() != before {
		t.Error("NewSecret keeps a reference to the caller's slice")
	}
}
