package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/standardwebhooks"
)

func TestIngestVerifiesStandardWebhooks(t *testing.T) {
	secret := standardwebhooks.GenerateSecret()
	url := start(t, "-webhook-secret", secret.Encode())
	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{secret}})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"Feature","id":"w1","geometry":null,"properties":null}`)
	send := func(sign func(*http.Request)) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url+"/features", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/geo+json")
		sign(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed")
	}
	// A forgery with the real delivery's id is refused, and claims nothing.
	forged := func(r *http.Request) {
		_ = signer.SignRequest(r, "msg_1", body)
		r.Header.Set("webhook-signature", "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	}
	if code, _ := send(forged); code != http.StatusUnauthorized {
		t.Fatalf("forged delivery: %d, want 401", code)
	}
	signed := func(r *http.Request) {
		if err := signer.SignRequest(r, "msg_1", body); err != nil {
			t.Fatal(err)
		}
	}
	if code, replayed := send(signed); code != http.StatusCreated || replayed != "" {
		t.Fatalf("signed delivery after the forgery: %d replayed=%q, want a fresh 201", code, replayed)
	}
	if code, replayed := send(signed); code != http.StatusCreated || replayed != "true" {
		t.Fatalf("re-signed retry: %d replayed=%q, want the replay", code, replayed)
	}
}

// With webhook keys, the verifier's cheap checks (Verifier.Precheck: the
// headers, the timestamp, a query) run in front of admission: while a
// signed request holds the only slot in flight, an unsigned request is
// answered 401, and a signed one sent with a query 400, from their headers
// and URL alone, not 429 or 503 by admission. Unsigned traffic costs only
// its rejection. A signed request still meets admission (503 while the
// only work slot is held), and the body is verified behind it, before the
// key.
func TestIngestUnsignedRefusedBeforeAdmission(t *testing.T) {
	secret := standardwebhooks.GenerateSecret()
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	url := startWith(t, hook(func(fs []service.Feature) {
		if len(fs) == 1 && fs[0].ID == "slow" {
			close(entered)
			<-release
		}
	}, 0), "-webhook-secret", secret.Encode(), "-max-in-flight", "1")
	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{secret}})
	if err != nil {
		t.Fatal(err)
	}
	post := func(id, query string, sign bool) (int, string) {
		t.Helper()
		body := []byte(`{"type":"Feature","id":"` + id + `","geometry":null,"properties":null}`)
		req, _ := http.NewRequest(http.MethodPost, url+"/features"+query, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/geo+json")
		if sign {
			if err := signer.SignRequest(req, "msg_"+id, body); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// Hold the only work slot: a signed delivery held in its handler.
	body := []byte(`{"type":"Feature","id":"slow","geometry":null,"properties":null}`)
	req, _ := http.NewRequest(http.MethodPost, url+"/features", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/geo+json")
	if err := signer.SignRequest(req, "msg_slow", body); err != nil {
		t.Fatal(err)
	}
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	// A signed probe waits for the slot, and is refused when none frees.
	if code, b := post("probe", "", true); code != http.StatusServiceUnavailable {
		t.Fatalf("a signed probe while the only slot is held: %d %s; want 503", code, b)
	}
	if code, b := post("unsigned", "", false); code != http.StatusUnauthorized || !strings.Contains(b, "#webhook-signature-missing") {
		t.Errorf("an unsigned request while admission is full: %d %s; want 401 webhook-signature-missing, before admission", code, b)
	}
	if code, b := post("query", "?x=1", true); code != http.StatusBadRequest || !strings.Contains(b, "#webhook-query-not-signed") {
		t.Errorf("a signed request with a query while admission is full: %d %s; want 400 webhook-query-not-signed, before admission", code, b)
	}
}

// With -webhook-public-key (whpk_…) the service takes Standard Webhooks
// signed v1a (ed25519) with the matching signing key, and refuses a
// signature under another key; -webhook-secret and -webhook-public-key
// may be given together.
func TestIngestVerifiesAsymmetricWebhooks(t *testing.T) {
	key, other := standardwebhooks.GenerateSigningKey(), standardwebhooks.GenerateSigningKey()
	secret := standardwebhooks.GenerateSecret()
	url := start(t, "-webhook-public-key", key.Public().Encode(), "-webhook-secret", secret.Encode())
	body := []byte(`{"type":"Feature","id":"v1a","geometry":null,"properties":null}`)
	send := func(k standardwebhooks.SigningKey) (int, string) {
		signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{SigningKeys: []standardwebhooks.SigningKey{k}})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, url+"/features", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/geo+json")
		if err := signer.SignRequest(req, "msg_v1a", body); err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed")
	}
	if code, _ := send(other); code != http.StatusUnauthorized {
		t.Fatalf("signed under another key: %d, want 401", code)
	}
	if code, replayed := send(key); code != http.StatusCreated || replayed != "" {
		t.Fatalf("signed v1a: %d replayed=%q, want a fresh 201", code, replayed)
	}
	if code, replayed := send(key); code != http.StatusCreated || replayed != "true" {
		t.Fatalf("re-signed retry: %d replayed=%q, want the replay", code, replayed)
	}
}
