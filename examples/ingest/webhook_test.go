package main

import (
	"bytes"
	"io"
	"net/http"
	"testing"

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
