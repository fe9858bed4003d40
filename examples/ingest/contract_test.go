package main

import (
	"bufio"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/middleware/contracttest"
)

// contractStores are the stores the contract suite runs against: every
// store the service can open, each run with its own key prefix or tables.
func contractStores(t *testing.T) []struct {
	name string
	args []string
} {
	suffix := strconv.FormatUint(rand.Uint64(), 36)
	t.Cleanup(func() { dropTables(t, "contract_keys_"+suffix, "contract_features_"+suffix) })
	dropRedisPrefix(t, "geoidem-contract-"+suffix+":")
	return []struct {
		name string
		args []string
	}{
		{"memory", []string{"-store", "memory"}},
		{"redis", []string{"-store", testkit.SharedURL(), "-redis-prefix", "geoidem-contract-" + suffix + ":", "-redis-volatile"}},
		{"postgres", []string{"-store", postgresURL(), "-pg-key-table", "contract_keys_" + suffix, "-pg-features-table", "contract_features_" + suffix}},
	}
}

// TestContract runs the middleware's contract suite, with the paired sender,
// against the service started in process, once per store.
func TestContract(t *testing.T) {
	for _, st := range contractStores(t) {
		t.Run(st.name, func(t *testing.T) {
			url := start(t, st.args...)
			contracttest.Run(t, contracttest.Target{
				URL:        url,
				Path:       "/features",
				Executions: executions(t, url),
			})
		})
	}
}

// executions counts the runs of the ingest handler behind the middleware,
// from the service's own metrics: every outcome for which the handler ran.
func executions(t *testing.T, url string) func() int {
	ran := map[string]bool{"executed": true, "released": true, "lease_lost": true}
	return func() int {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Errorf("GET /metrics: %v", err)
			return -1
		}
		defer resp.Body.Close()
		total := 0
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			// geoidem_requests_total{outcome="executed"} 3
			rest, ok := strings.CutPrefix(sc.Text(), `geoidem_requests_total{outcome="`)
			if !ok {
				continue
			}
			outcome, value, ok := strings.Cut(rest, `"} `)
			if !ok || !ran[outcome] {
				continue
			}
			n, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Errorf("GET /metrics: %q: %v", sc.Text(), err)
				return -1
			}
			total += int(n)
		}
		if err := sc.Err(); err != nil {
			t.Errorf("GET /metrics: %v", err)
		}
		return total
	}
}
