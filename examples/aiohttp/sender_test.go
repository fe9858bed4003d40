package aiohttp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// senderResult is what sender.py prints.
type senderResult struct {
	Delivered       int            `json:"delivered"`
	Final           map[string]int `json:"final"`
	Retried         map[string]int `json:"retried"`
	TransportErrors int            `json:"transport_errors"`
	Errors          []string       `json:"errors"`
}

// A provider's aiohttp sender, its pool of 16 or 100 connections from one
// address, delivers 200 events at once to examples/ingest on its defaults,
// then (pool 16) the same 200 again, as at-least-once delivery does: no
// connection is refused or reset, every delivery ends 201, and each event
// runs once (200 executed, the rest replayed).
func TestAiohttpSenderPoolsAgainstIngest(t *testing.T) {
	bin := build(t, t.TempDir(), "github.com/geoidem/geoidem/examples/ingest")
	for _, c := range []struct{ pool, times int }{{16, 2}, {100, 1}} {
		t.Run(fmt.Sprintf("pool %d", c.pool), func(t *testing.T) {
			url := start(t, exec.Command(bin, "-addr", "127.0.0.1:0"), regexp.MustCompile(`^ingest: serving (http://\S+)`))
			out, err := exec.Command("/usr/bin/python3", "sender.py", "--url", url+"/features",
				"--events", "200", "--pool", strconv.Itoa(c.pool), "--times", strconv.Itoa(c.times)).Output()
			if err != nil {
				t.Fatalf("sender.py: %v\n%s", err, out)
			}
			var res senderResult
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("sender.py printed %q: %v", out, err)
			}
			want := 200 * c.times
			if res.Delivered != want || res.Final["201"] != want || res.TransportErrors != 0 {
				t.Errorf("sender: %+v; want %d delivered, each 201, and no transport error", res, want)
			}
			if len(res.Retried) > 0 {
				t.Logf("retried statuses on the way: %v", res.Retried)
			}
			executed, replayed := outcome(t, url, "executed"), outcome(t, url, "replayed")
			if executed != 200 || c.times == 2 && replayed != 200 {
				t.Errorf("the service executed %d and replayed %d; want 200 executed (each event once) and %d replayed", executed, replayed, 200*(c.times-1))
			}
		})
	}
}

// outcome reads the service's count of requests that ended in outcome.
func outcome(t *testing.T, url, outcome string) int {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^geoidem_requests_total\{outcome="` + outcome + `"\} (\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("GET /metrics has no count of %s requests", outcome)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
