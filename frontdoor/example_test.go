package frontdoor_test

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/middleware"
)

// A receiving service behind its front door, built in one piece: the
// Door's Handler around the idempotency middleware (which counts the
// Door's clients), its Server and its Listener.
func Example() {
	door, err := frontdoor.New(frontdoor.Config{})
	if err != nil {
		log.Fatal(err)
	}
	idem, err := middleware.New(new(memstore.Store), middleware.Config{Client: door.Client})
	if err != nil {
		log.Fatal(err)
	}
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /features", door.Handler(idem.Handler(ingest)))
	srv := door.Server(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(door.Listener(ln))
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

// An exporter of its own reads a Door's Stats as metrics: each series
// with its name, help, kind and label, here its non-zero values in the
// Prometheus text format.
func ExampleStats_Series() {
	st := frontdoor.Stats{RefusedBusy: 2, CutSlow: 1} // as a Door's Stats returns it
	st.Series(func(name, help string, counter bool, label, value string, n float64) {
		if n == 0 {
			return
		}
		if label != "" {
			name += "{" + label + "=" + strconv.Quote(value) + "}"
		}
		fmt.Println(name, n)
	})
	// Output:
	// geoidem_frontdoor_bodies_cut_total{reason="slow"} 1
	// geoidem_frontdoor_refused_total{reason="server_busy"} 2
}
