package standardwebhooks_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// Receiving Standard Webhooks: the Verifier goes in front of the
// idempotency middleware, which takes its key from webhook-id.
func Example() {
	secret, err := standardwebhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	now := time.Unix(1_800_000_000, 0) // a fixed clock, for the example's output
	verify, err := standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{
		Secrets: []standardwebhooks.Secret{secret},
		Now:     func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	idem, err := middleware.New(new(memstore.Store), middleware.Config{KeyHeader: standardwebhooks.HeaderID})
	if err != nil {
		panic(err)
	}
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"stored":["f1"]}`)
	})
	h := verify.Handler(idem.Handler(ingest)) // verify first: a forgery claims no key

	payload := []byte(`{"type":"Feature","id":"f1","geometry":null,"properties":null}`)
	// The sender's side, on the same clock.
	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{
		Secrets: []standardwebhooks.Secret{secret},
		Now:     func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	deliver := func(forged bool) {
		r := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(payload))
		if err := signer.SignRequest(r, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", payload); err != nil {
			panic(err)
		}
		if forged {
			r.Header.Set("webhook-signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("Idempotent-Replayed"), strings.TrimSpace(w.Body.String()))
	}
	deliver(true)  // forged
	deliver(false) // the real delivery
	deliver(false) // and its retry
	// Output:
	// 401  {"type":"https://github.com/geoidem/geoidem/blob/main/docs/problems.md#webhook-signature-invalid","title":"Webhook signature invalid","status":401,"detail":"No v1 signature in webhook-signature matches this request under any configured secret."}
	// 201  {"stored":["f1"]}
	// 201 true {"stored":["f1"]}
}

// Each attempt is re-signed with its own timestamp; the id stays the same.
// The first signature is the published test vector of the Standard
// Webhooks reference libraries.
func ExampleSigner_SignRequest() {
	secret, err := standardwebhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	now := time.Unix(1614265330, 0)
	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{
		Secrets: []standardwebhooks.Secret{secret},
		Now:     func() time.Time { return now }, // a fake clock; default time.Now
	})
	if err != nil {
		panic(err)
	}
	body := []byte(`{"test": 2432232314}`)
	for attempt := 1; attempt <= 2; attempt++ {
		// With the geoidem client this runs in Config.PrepareAttempt.
		req, _ := http.NewRequest(http.MethodPost, "https://receiver.example/webhooks", bytes.NewReader(body))
		if err := signer.SignRequest(req, "msg_p5jXN8AQM9LWM0D4loKWxJek", body); err != nil {
			panic(err)
		}
		fmt.Println(attempt, req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature"))
		now = now.Add(6 * time.Minute) // the retry comes later
	}
	// Output:
	// 1 msg_p5jXN8AQM9LWM0D4loKWxJek 1614265330 v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
	// 2 msg_p5jXN8AQM9LWM0D4loKWxJek 1614265690 v1,xrwYa9CBFv7TtibpdSob1mr0sFWX4Cgjeld5h4uS900=
}

// Verify checks a body already read, on a fake clock here.
func ExampleVerifier_Verify() {
	secret, _ := standardwebhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	now := time.Unix(1614265330, 0)
	v, err := standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{
		Secrets: []standardwebhooks.Secret{secret},
		Now:     func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	fmt.Println(v.Verify(h, []byte(`{"test": 2432232314}`)))
	fmt.Println(v.Verify(h, []byte(`{"test": 2432232315}`)))
	now = now.Add(10 * time.Minute)
	fmt.Println(v.Verify(h, []byte(`{"test": 2432232314}`)))
	// Output:
	// <nil>
	// standardwebhooks: invalid webhook signature: No v1 signature in webhook-signature matches this request under any configured secret.
	// standardwebhooks: webhook timestamp out of tolerance: The webhook-timestamp is 10m0s in the past; at most 5m0s is accepted. Sign every attempt afresh.
}

// Rotating a secret without downtime: the receiver accepts both secrets
// while the sender switches, and the sender may sign with both.
func ExampleVerifierConfig_rotation() {
	oldSecret, _ := standardwebhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	newSecret := standardwebhooks.GenerateSecret()
	_, err := standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{
		Secrets: []standardwebhooks.Secret{newSecret, oldSecret},
	})
	fmt.Println(err, newSecret) // a Secret prints redacted
	// Output: <nil> standardwebhooks.Secret(redacted)
}

// Signing with an ed25519 key (v1a), here the published v1a test vector
// of the Standard Webhooks reference libraries: a whsk_ key is the 32-byte
// ed25519 seed.
func ExampleSigningKey() {
	key, err := standardwebhooks.ParseSigningKey("whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=")
	if err != nil {
		panic(err)
	}
	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{
		SigningKeys: []standardwebhooks.SigningKey{key},
		Now:         func() time.Time { return time.Unix(1614265330, 0) },
	})
	if err != nil {
		panic(err)
	}
	body := []byte(`{"test": 2432232314}`)
	req, _ := http.NewRequest(http.MethodPost, "https://receiver.example/webhooks", bytes.NewReader(body))
	if err := signer.SignRequest(req, "msg_p5jXN8AQM9LWM0D4loKWxJek", body); err != nil {
		panic(err)
	}
	fmt.Println(req.Header.Get("webhook-signature"))
	fmt.Println(key.Public().Encode()) // what the receivers get
	fmt.Println(key)                   // a SigningKey prints redacted
	// Output:
	// v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==
	// whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g=
	// standardwebhooks.SigningKey(redacted)
}

// A receiver of asymmetric (v1a) signatures holds the sender's public key
// only; during a move from v1 to v1a it holds the secret as well, and
// either signature is accepted.
func ExampleVerifierConfig_publicKeys() {
	public, err := standardwebhooks.ParsePublicKey("whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g=")
	if err != nil {
		panic(err)
	}
	secret, _ := standardwebhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	v, err := standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{
		Secrets:    []standardwebhooks.Secret{secret}, // until the sender signs v1a only
		PublicKeys: []standardwebhooks.PublicKey{public},
		Now:        func() time.Time { return time.Unix(1614265330, 0) },
	})
	if err != nil {
		panic(err)
	}
	payload := []byte(`{"test": 2432232314}`)
	for _, sig := range []string{
		"v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==",
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
		"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==",
		"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
	} {
		h := http.Header{}
		h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
		h.Set("webhook-timestamp", "1614265330")
		h.Set("webhook-signature", sig)
		fmt.Println(v.Verify(h, payload))
	}
	// Output:
	// <nil>
	// <nil>
	// <nil>
	// standardwebhooks: invalid webhook signature: No v1 or v1a signature in webhook-signature matches this request under any configured secret or public key.
}
