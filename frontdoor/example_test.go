package frontdoor_test

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// A receiving service behind the front door: Hold around the route,
// BodyRate outside Admission, Admission outside the idempotency
// middleware, one client identity for both, Conns around the listener and
// in the server's ConnState.
func Example() {
	clients, err := frontdoor.NewClients(frontdoor.ClientsConfig{})
	if err != nil {
		log.Fatal(err)
	}
	conns, err := frontdoor.NewConns(frontdoor.ConnsConfig{})
	if err != nil {
		log.Fatal(err)
	}
	rate, err := frontdoor.NewBodyRate(frontdoor.BodyRateConfig{})
	if err != nil {
		log.Fatal(err)
	}
	admit, err := middleware.NewAdmission(middleware.AdmissionConfig{
		Client:       clients.Client,
		BodyDeadline: frontdoor.BodyDeadline,
		CutBody:      frontdoor.CutBody,
	})
	if err != nil {
		log.Fatal(err)
	}
	idem, err := middleware.New(new(memstore.Store), middleware.Config{Client: clients.Client})
	if err != nil {
		log.Fatal(err)
	}
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /features", conns.Hold(rate.Handler(admit.Handler(idem.Handler(ingest)))))
	srv := &http.Server{
		Handler:           mux,
		ConnState:         conns.ConnState,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       frontdoor.DefaultBodyTimeout,
		IdleTimeout:       frontdoor.DefaultIdleTimeout,
		MaxHeaderBytes:    16 << 10,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(conns.Listener(ln))
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/features", strings.NewReader(`{"type":"Feature","geometry":null,"properties":null}`))
	req.Header.Set("Idempotency-Key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 201 Created
}
