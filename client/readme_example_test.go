package client_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// One delivery to a receiver behind the geoidem middleware, sent twice as
// a sender re-run would: the second is answered from the receiver's record.
// docs/sender.md's "Delivering" quotes this example from
// `sender, err :=` to the Println; keep the two in step.
func ExampleSender_Deliver_paired() {
	idem, err := middleware.New(new(memstore.Store), middleware.Config{})
	if err != nil {
		log.Fatal(err)
	}
	receiver := httptest.NewServer(idem.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	defer receiver.Close()
	ctx := context.Background()
	deadLetters := client.NewJSONLinesSink(os.Stdout)
	url, key := receiver.URL+"/features", "evt-1"
	feature := []byte(`{"type":"Feature","id":"p1","geometry":{"type":"Point","coordinates":[13.4,52.5]},"properties":null}`)

	for range 2 {
		sender, err := client.New(http.DefaultClient, client.Config{
			DeadLetter: deadLetters, // every delivery that ends without success, with its payload
		})
		if err != nil {
			log.Fatal(err)
		}
		res, err := sender.Deliver(ctx, client.Delivery{URL: url, Key: key, Body: feature, ContentType: "application/geo+json"})
		if err != nil { // permanent (a 4xx), or out of attempts or time: dead-lettered
			log.Print(err)
			return
		}
		fmt.Println(res.StatusCode, "after", res.Attempts, "attempt(s), replayed:", res.Replayed)
	}
	// Output:
	// 201 after 1 attempt(s), replayed: false
	// 201 after 1 attempt(s), replayed: true
}
