package adminhttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/adminhttp"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// overHTTP is a memstore whose Admin methods go through the handler and
// the client: the conformance suite's Admin rules check the round trip.
type overHTTP struct {
	keystore.Store
	*adminhttp.Client
}

func TestConformanceOverHTTP(t *testing.T) {
	keystoretest.Run(t, func(t *testing.T) keystore.Store {
		store := new(memstore.Store)
		srv := httptest.NewServer(adminhttp.Handler(store))
		t.Cleanup(srv.Close)
		return overHTTP{Store: store, Client: &adminhttp.Client{URL: srv.URL}}
	})
}

func TestRefusesForeignHostAndMissingHeader(t *testing.T) {
	srv := httptest.NewServer(adminhttp.Handler(new(memstore.Store)))
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		host   string
		header bool
		want   int
	}{
		{"loopback with header", "", true, http.StatusOK},
		{"localhost with header", "localhost:1234", true, http.StatusOK},
		{"no header", "", false, http.StatusForbidden},
		{"rebound host name", "attacker.example:80", true, http.StatusForbidden},
		{"public address", "192.0.2.1", true, http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/summary", nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.header {
			req.Header.Set(adminhttp.HeaderName, "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
}
