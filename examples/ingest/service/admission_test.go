package service

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/middleware"
)

// peakValidator counts the large bodies being validated at once.
type peakValidator struct {
	geojson.RequestValidator
	now, peak atomic.Int64
}

func (v *peakValidator) DecodeRequest(r *http.Request, body []byte) (any, error) {
	if len(body) > 256<<10 {
		n := v.now.Add(1)
		defer v.now.Add(-1)
		for p := v.peak.Load(); n > p && !v.peak.CompareAndSwap(p, n); p = v.peak.Load() {
		}
	}
	return v.RequestValidator.DecodeRequest(r, body)
}

// clientFrom returns an HTTP client whose connections come from the
// loopback address ip: another client, to the service's admission.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}}
}

func postFrom(c *http.Client, url, key string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/features", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/geo+json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// A burst of hole-heavy 1 MiB bodies from 16 clients at once: the service
// (with its defaults) validates at most 12 MiB of large bodies at once
// (three quarters of its 16 MiB in flight), and a small sender from another
// address meets no 503 meanwhile.
func TestBurstIsAdmittedWithinBounds(t *testing.T) {
	v := &peakValidator{}
	const maxBytes = 16 << 20 // the front door's default, set so that the bound checked is the one configured
	svc, err := New(context.Background(), Config{Validator: v, MaxInFlightBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()

	holes := testkit.Holes(19_500)
	if len(holes) > middleware.DefaultMaxBodyBytes {
		t.Fatalf("the body is %d bytes, over the limit", len(holes))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	start := make(chan struct{})
	for c := range 16 {
		client := clientFrom(fmt.Sprintf("127.0.1.%d", c+1))
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				code, _ := postFrom(client, srv.URL, fmt.Sprintf("burst-%d-%d", c, i), holes) // a refused body may end in a reset
				mu.Lock()
				statuses[code]++
				mu.Unlock()
			}()
		}
	}
	close(start)
	small := clientFrom("127.0.0.2")
	var smallBad []string
	for i := range 30 {
		body := []byte(`{"type":"Feature","id":"s` + strconv.Itoa(i) + `","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`)
		code, err := postFrom(small, srv.URL, "small-"+strconv.Itoa(i), body)
		if code != http.StatusCreated {
			smallBad = append(smallBad, fmt.Sprintf("%d %v", code, err))
		}
	}
	wg.Wait()
	// Large bodies hold at most three quarters of the 16 MiB in flight.
	if p := v.peak.Load(); p*int64(len(holes)) > maxBytes*3/4 {
		t.Errorf("%d large bodies of %d bytes were validated at once, want at most %d (statuses %v)",
			p, len(holes), maxBytes*3/4/len(holes), statuses)
	}
	if len(smallBad) > 0 {
		t.Errorf("the small sender got %v during the burst, want 201 every time", smallBad)
	}
	t.Logf("burst statuses %v (0: connection reset after a refusal), peak large validations %d", statuses, v.peak.Load())
}
