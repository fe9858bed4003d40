package standardwebhooks_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/standardwebhooks"
)

// The published test vector of the Standard Webhooks reference libraries:
// github.com/standard-webhooks/standard-webhooks, libraries/go/webhook_test.go
// (TestWebhookSign, and defaultMsgID, defaultPayload, defaultSecret); the
// same values appear in libraries/go/webhook_symmetric_test.go and in the
// other languages' reference tests.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorRawSecret = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // the same, without the prefix (TestWebhookPrefix)
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = "1614265330"
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	// A well-formed v1 signature that matches nothing, from the same file
	// ("invalid signature is invalid", "valid multi sig is valid").
	vectorWrongSignature = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

var vectorTime = time.Unix(1614265330, 0)

// fakeClock is a settable clock, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func mustSecret(t testing.TB, s string) standardwebhooks.Secret {
	t.Helper()
	sec, err := standardwebhooks.ParseSecret(s)
	if err != nil {
		t.Fatalf("ParseSecret: %v", err)
	}
	return sec
}

// rawSecret returns a secret of n bytes, all b.
func rawSecret(t testing.TB, b byte, n int) standardwebhooks.Secret {
	t.Helper()
	key := make([]byte, n)
	for i := range key {
		key[i] = b
	}
	sec, err := standardwebhooks.NewSecret(key)
	if err != nil {
		t.Fatalf("NewSecret: %v", err)
	}
	return sec
}

func newVerifier(t testing.TB, cfg standardwebhooks.VerifierConfig) *standardwebhooks.Verifier {
	t.Helper()
	v, err := standardwebhooks.NewVerifier(cfg)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

func newSigner(t testing.TB, cfg standardwebhooks.SignerConfig) *standardwebhooks.Signer {
	t.Helper()
	s, err := standardwebhooks.NewSigner(cfg)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	return s
}

func headers(id, ts, sig string) http.Header {
	h := http.Header{}
	if id != "" {
		h.Set(standardwebhooks.HeaderID, id)
	}
	if ts != "" {
		h.Set(standardwebhooks.HeaderTimestamp, ts)
	}
	if sig != "" {
		h.Set(standardwebhooks.HeaderSignature, sig)
	}
	return h
}

func vectorHeaders() http.Header { return headers(vectorID, vectorTimestamp, vectorSignature) }

// macOf is an independent HMAC-SHA256 of content under sec, in base64, for
// tests that build signatures by hand. The key is recovered from the
// serialized form, so it exercises Encode as well.
func macOf(sec standardwebhooks.Secret, content string) string {
	key, err := base64.StdEncoding.DecodeString(sec.Encode()[len(standardwebhooks.SecretPrefix):])
	if err != nil {
		panic(err)
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(content))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}
