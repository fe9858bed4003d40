package main

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// One delivery sent to five spellings of /features (percent-encodings of
// unreserved characters, which http.ServeMux routes to the same handler) is
// one request: the handler runs once and the other four are replayed, signed
// or not. A signed message re-sent as captured, to another spelling, still
// verifies (the signature does not cover the path), so only the
// middleware's scope can stop it.
func TestIngestPathSpellingsRunOnce(t *testing.T) {
	spellings := []string{"/features", "/%66eatures", "/feature%73", "/%66%65atures", "/%66eature%73"}
	body := []byte(`{"type":"Feature","id":"p1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`)
	secret := standardwebhooks.GenerateSecret()
	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{secret}})
	if err != nil {
		t.Fatal(err)
	}
	for _, signed := range []bool{false, true} {
		var mu sync.Mutex
		var runs []string // a line per feature a handler run was about to write
		count := func(fs []service.Feature) {
			mu.Lock()
			defer mu.Unlock()
			for _, f := range fs {
				runs = append(runs, "run "+f.ID)
			}
		}
		var args []string
		if signed {
			args = append(args, "-webhook-secret", secret.Encode())
		}
		url := startWith(t, hook(count, 0), args...)
		var header http.Header // the first delivery's headers, re-sent as captured
		for i, path := range spellings {
			req, err := http.NewRequest(http.MethodPost, url+path, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if header == nil {
				req.Header.Set("Content-Type", "application/geo+json")
				req.Header.Set("Idempotency-Key", "p1")
				if signed {
					if err := signer.SignRequest(req, "msg_p1", body); err != nil {
						t.Fatal(err)
					}
				}
				header = req.Header.Clone()
			} else {
				req.Header = header.Clone()
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			want := map[bool]string{true: "", false: "true"}[i == 0]
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != want {
				t.Errorf("signed %v: %s: %d replayed=%q, want 201 replayed=%q", signed, path, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), want)
			}
		}
		mu.Lock()
		if len(runs) != 1 {
			t.Errorf("signed %v: the handler ran %d times for one delivery sent to %d spellings of /features, want 1; runs: %q", signed, len(runs), len(spellings), runs)
		}
		mu.Unlock()
	}
}
