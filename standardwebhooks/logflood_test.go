package standardwebhooks_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/standardwebhooks"
)

// A flood of unsigned requests writes a bounded number of log lines, the
// last of them with the count of those not written.
func TestRejectionLogIsBounded(t *testing.T) {
	var buf bytes.Buffer
	v := newVerifier(t, standardwebhooks.VerifierConfig{
		Secrets: []standardwebhooks.Secret{rawSecret(t, 1, 32)},
		Logger:  slog.New(slog.NewTextHandler(&buf, nil)),
	})
	h := v.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Fatal("an unsigned request passed") }))
	const n = 2000
	for range n {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}")))
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", w.Code)
		}
	}
	if lines := strings.Count(buf.String(), "\n"); lines > 20 {
		t.Errorf("%d unsigned requests wrote %d log lines (%d bytes), want at most 20", n, lines, buf.Len())
	}
}
