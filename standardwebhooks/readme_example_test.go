package standardwebhooks_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// A receiver that verifies Standard Webhooks signatures before the claim
// and takes its key from webhook-id, and the paired sender that re-signs
// every attempt; the second delivery of the same event is replayed.
// docs/receiving.md's "Receiving Standard Webhooks" quotes this example's receiver
// (from `verifier, err :=` to `mux.Handle`) and its sender (from
// `signer, _ :=` to the end of `client.New`); keep them in step.
func Example_pairedSender() {
	current := standardwebhooks.GenerateSecret()
	previous, err := standardwebhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		log.Fatal(err)
	}
	store := new(memstore.Store)
	mux := http.NewServeMux()
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})

	verifier, err := standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{
		Secrets: []standardwebhooks.Secret{current, previous}, // rotation: either is accepted
	})
	if err != nil {
		log.Fatal(err)
	}
	idem, err := middleware.New(store, middleware.Config{KeyHeader: standardwebhooks.HeaderID})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("POST /features", verifier.Handler(idem.Handler(ingest)))

	receiver := httptest.NewServer(mux)
	defer receiver.Close()

	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{current}})
	if err != nil {
		log.Fatal(err)
	}
	sender, err := client.New(http.DefaultClient, client.Config{
		PrepareAttempt: func(req *http.Request, a client.Attempt) error {
			return signer.SignRequest(req, a.Key, a.Body) // same webhook-id, fresh timestamp
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	for range 2 {
		res, err := sender.Deliver(context.Background(), client.Delivery{
			URL:  receiver.URL + "/features",
			Key:  "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
			Body: []byte(`{"type":"Feature","id":"p1","geometry":null,"properties":null}`),
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.StatusCode, "replayed:", res.Replayed)
	}
	// Output:
	// 201 replayed: false
	// 201 replayed: true
}
