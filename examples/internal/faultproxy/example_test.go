package faultproxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/geoidem/geoidem/examples/internal/faultproxy"
)

func Example() {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	defer receiver.Close()
	target, _ := url.Parse(receiver.URL)

	// Request 2 gets a 503, request 3 loses its acknowledgement; the rest
	// pass (the probabilities are all 0).
	p, err := faultproxy.New(target, faultproxy.Config{
		Seed:           1,
		Schedule:       map[uint64]faultproxy.Fault{2: faultproxy.Inject503, 3: faultproxy.LostAck},
		RetryAfterForm: faultproxy.RetryAfterSeconds,
	})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	proxyURL, err := p.Start()
	if err != nil {
		panic(err)
	}

	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for range 4 {
		res, err := c.Post(proxyURL+"/features", "application/geo+json", nil)
		if err != nil {
			fmt.Println("network error")
			continue
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if f := res.Header.Get(faultproxy.HeaderFault); f != "" {
			fmt.Printf("%d (%s), Retry-After: %s\n", res.StatusCode, f, res.Header.Get("Retry-After"))
			continue
		}
		fmt.Println(res.StatusCode)
	}
	st := p.Stats()
	fmt.Printf("requests %d, forwarded %d, 503s %d, lost acks %d\n", st.Requests, st.Forwarded, st.Inject503, st.LostAck)
	// Output:
	// 201
	// 503 (inject-503), Retry-After: 1
	// network error
	// 201
	// requests 4, forwarded 3, 503s 1, lost acks 1
}
