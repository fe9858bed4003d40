package standardwebhooks_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/standardwebhooks"
)

// The raw webhook-id never reaches the log, on any path: records carry its
// SHA-256 instead (webhook_id_sha256), as the middleware logs only hashed
// keys.
func TestHandlerNeverLogsRawWebhookID(t *testing.T) {
	const id = "msg_RawIdNeverLogged42"
	sum := sha256.Sum256([]byte(id))
	hashed := "webhook_id_sha256=" + hex.EncodeToString(sum[:])
	for name, request := range map[string]func(f *handlerFixture) *http.Request{
		"verified": func(f *handlerFixture) *http.Request { return f.signed(id, body) },
		"signature invalid": func(f *handlerFixture) *http.Request {
			r := f.signed(id, body)
			r.Header.Set(standardwebhooks.HeaderSignature, vectorWrongSignature)
			return r
		},
		"timestamp stale": func(f *handlerFixture) *http.Request {
			r := f.signed(id, body)
			f.clock.Advance(time.Hour)
			return r
		},
		"body too large": func(f *handlerFixture) *http.Request { return f.signed(id, bytes.Repeat(body, 100)) },
		"body unreadable": func(f *handlerFixture) *http.Request {
			r := f.signed(id, body)
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:2]), errReader{}))
			return r
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newHandlerFixture(t, standardwebhooks.VerifierConfig{MaxBodyBytes: int64(10 * len(body))})
			f.serve(request(f))
			logs := f.logs.String()
			if strings.Contains(logs, id) {
				t.Errorf("the log contains the raw webhook-id:\n%s", logs)
			}
			if !strings.Contains(logs, hashed) {
				t.Errorf("the log lacks %s:\n%s", hashed, logs)
			}
		})
	}
}

// webhook-id is taken literally: an id with quotes is another key than the
// same id without them (the middleware would otherwise read `"msg_1"` as a
// structured-field string, that is as msg_1), and an id with a comma is a
// key like any other, not a malformed one.
func TestWebhookIDIsTakenLiterally(t *testing.T) {
	f := newHandlerFixture(t, standardwebhooks.VerifierConfig{})
	h, _, runs := stack(t, f, true)
	for i, tc := range []struct {
		id           string
		wantReplayed bool
		wantRuns     int
	}{
		{"msg_1", false, 1},
		{`"msg_1"`, false, 2}, // another id: executed, not msg_1's replay
		{`"msg_1"`, true, 2},
		{"msg_1", true, 2},
		{`a,b`, false, 3},
		{`a,b`, true, 3},
		{`"a\"b"`, false, 4},
		{`"a\"b"`, true, 4},
		{`a"b`, false, 5}, // what `"a\"b"` means as a structured-field string: another id again
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, f.signed(tc.id, body))
		if w.Code != http.StatusCreated || (w.Header().Get("Idempotent-Replayed") == "true") != tc.wantReplayed || *runs != tc.wantRuns {
			t.Fatalf("delivery %d, webhook-id %s: %d (replayed %q), ingest ran %d times; want 201 (replayed %v) and %d runs",
				i+1, tc.id, w.Code, w.Header().Get("Idempotent-Replayed"), *runs, tc.wantReplayed, tc.wantRuns)
		}
	}
}

// Secrets shorter than MinSigningSecretLen (24 bytes, the specification's
// minimum) are refused wherever a Secret is made, so neither a Verifier
// nor a Signer can run on one: whsec_AA is a single zero byte.
func TestShortSecretsAreRefused(t *testing.T) {
	for _, s := range []string{"whsec_AA", "whsec_AAAA", "whsec_" + strings.Repeat("A", 30) + "==" /* 22 bytes */, "c2VjcmV0"} {
		if _, err := standardwebhooks.ParseSecret(s); !errors.Is(err, standardwebhooks.ErrInvalidKey) || !strings.Contains(err.Error(), "24") {
			t.Errorf("ParseSecret(%q): %v, want ErrInvalidKey naming the 24-byte minimum", s, err)
		}
	}
	if _, err := standardwebhooks.NewSecret(make([]byte, standardwebhooks.MinSigningSecretLen-1)); !errors.Is(err, standardwebhooks.ErrInvalidKey) {
		t.Errorf("NewSecret of %d bytes: %v, want ErrInvalidKey", standardwebhooks.MinSigningSecretLen-1, err)
	}
	if _, err := standardwebhooks.NewSecret(make([]byte, standardwebhooks.MinSigningSecretLen)); err != nil {
		t.Errorf("NewSecret of exactly MinSigningSecretLen bytes: %v", err)
	}
	if _, err := standardwebhooks.ParseSecret(vectorSecret); err != nil {
		t.Errorf("the reference vector's 24-byte secret: %v", err)
	}
}
