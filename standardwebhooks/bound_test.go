package standardwebhooks_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/standardwebhooks"
)

// TestSignaturesPerRequestAreBounded: each well-formed v1a signature costs
// an ed25519 verification per public key, and a header of 1 MiB (net/http's
// default limit) holds over 11,000 of them: more than half a second of CPU
// per request, for the price of its headers. A webhook-signature carrying
// more than MaxSignatures signatures, in one field or several, is refused
// from the headers alone, as malformed, however many of them are good.
func TestSignaturesPerRequestAreBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	key := mustSigningKey(t, vectorSigningKey)
	v := newVerifier(t, standardwebhooks.VerifierConfig{PublicKeys: []standardwebhooks.PublicKey{key.Public()}, Now: func() time.Time { return now }})
	good := standardwebhooks.SignAsymmetric(key, "msg_1", now, body)
	junk := standardwebhooks.SignAsymmetric(standardwebhooks.GenerateSigningKey(), "msg_1", now, body)
	sigs := func(n int) string { return strings.Repeat(junk+" ", n-1) + good }

	if err := v.Verify(headers("msg_1", ts, sigs(standardwebhooks.MaxSignatures)), body); err != nil {
		t.Errorf("%d signatures, the last good: %v, want success", standardwebhooks.MaxSignatures, err)
	}
	over := headers("msg_1", ts, sigs(standardwebhooks.MaxSignatures+1))
	if err := v.CheckHeaders(over); !errors.Is(err, standardwebhooks.ErrMalformedHeaders) {
		t.Errorf("%d signatures: CheckHeaders: %v, want ErrMalformedHeaders", standardwebhooks.MaxSignatures+1, err)
	}
	// Over several fields, and counting tokens of every version.
	split := headers("msg_1", ts, strings.Repeat("v2,x ", standardwebhooks.MaxSignatures))
	split.Add(standardwebhooks.HeaderSignature, good)
	if err := v.Verify(split, body); !errors.Is(err, standardwebhooks.ErrMalformedHeaders) {
		t.Errorf("%d signatures over two fields: %v, want ErrMalformedHeaders", standardwebhooks.MaxSignatures+1, err)
	}
	// Only spaces (and tabs) separate signatures: other white space
	// (U+00A0, U+0085 are valid in a header as obs-text) neither hides
	// signatures from the count nor separates them.
	for _, sep := range []string{"\u00a0", "\u0085", "\u2003"} {
		hidden := headers("msg_1", ts, strings.Repeat(junk+sep, standardwebhooks.MaxSignatures)+good)
		if err := v.Verify(hidden, body); err == nil {
			t.Errorf("%d signatures separated by %+q: verified, want them counted or not split", standardwebhooks.MaxSignatures+1, sep)
		}
	}

	next := &downstream{}
	h := v.Handler(next)
	r, _ := http.NewRequest(http.MethodPost, "http://receiver.test/webhooks", nil)
	cr := &countingReader{r: strings.NewReader(string(body))}
	r.Body = io.NopCloser(cr)
	r.ContentLength = int64(len(body))
	r.Header = over
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized || next.calls != 0 || cr.n != 0 {
		t.Errorf("Handler: %d, next ran %d times, %d body bytes read; want 401 from the headers alone", w.Code, next.calls, cr.n)
	}
}
