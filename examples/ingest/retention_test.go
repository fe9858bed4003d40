package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore/adminhttp"
	"github.com/geoidem/geoidem/standardwebhooks"
)

var adminRE = regexp.MustCompile(`admin on (http://\S+)`)

// startAdmin runs the service in process with -admin-addr and returns its
// URL and its admin API's.
func startAdmin(t *testing.T, args ...string) (url, admin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := lineWriter{make(chan string, 16)}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, args...), out, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("run exited %d after cancel, want 0", c)
		}
	})
	for url == "" || admin == "" {
		select {
		case l := <-out.lines:
			if m := servingRE.FindStringSubmatch(l); m != nil {
				url = m[1]
			}
			if m := adminRE.FindStringSubmatch(l); m != nil {
				admin = m[1]
			}
		case c := <-code:
			code <- c
			t.Fatalf("run exited %d before serving", c)
		case <-time.After(10 * time.Second):
			t.Fatal("no URLs printed within 10s")
		}
	}
	return url, admin
}

// A recorded answer is kept long enough for the senders' retries: by
// default 24 h, and with a webhook key 30 h, over the longest schedule of
// the common Standard Webhooks senders (Svix retries for about 27.6 h after
// the first attempt); -retention sets it.
func TestIngestRetention(t *testing.T) {
	secret := standardwebhooks.GenerateSecret()
	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{secret}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want time.Duration
	}{
		{"default", nil, 24 * time.Hour},
		{"webhook secret", []string{"-webhook-secret", secret.Encode()}, 30 * time.Hour},
		{"-retention 72h", []string{"-retention", "72h"}, 72 * time.Hour},
		{"webhook secret and -retention 48h", []string{"-webhook-secret", secret.Encode(), "-retention", "48h"}, 48 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, admin := startAdmin(t, c.args...)
			body := []byte(`{"type":"Feature","id":"r","geometry":null,"properties":null}`)
			req, _ := http.NewRequest(http.MethodPost, url+"/features", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/geo+json")
			req.Header.Set("Idempotency-Key", "ret")
			if len(c.args) > 0 && c.args[0] == "-webhook-secret" {
				if err := signer.SignRequest(req, "msg_ret", body); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("POST: %d", resp.StatusCode)
			}
			sum, err := (&adminhttp.Client{URL: admin}).Summarize(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if sum.Completed != 1 || sum.OldestRemaining > c.want || sum.OldestRemaining < c.want-time.Minute {
				t.Errorf("%d records, the oldest kept for %v more; want 1, kept for %v", sum.Completed, sum.OldestRemaining, c.want)
			}
		})
	}
}
