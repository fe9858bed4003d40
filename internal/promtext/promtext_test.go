package promtext

import (
	"strings"
	"testing"
)

func TestExposition(t *testing.T) {
	var r Registry
	c := r.NewCounterVec("req_total", "Requests.\nBy outcome.", "outcome")
	c.Add("executed", 0)
	c.Add("replayed", 2)
	c.Add(`we"ird`, 1)
	h := r.NewHistogramVec("lat_seconds", "Latency.", "op", []float64{0.1, 1})
	h.Observe("claim", 0.05)
	h.Observe("claim", 0.1) // on the bound: counted in le="0.1"
	h.Observe("claim", 5)
	var b strings.Builder
	r.WriteText(&b)
	want := `# HELP req_total Requests.\nBy outcome.
# TYPE req_total counter
req_total{outcome="executed"} 0
req_total{outcome="replayed"} 2
req_total{outcome="we\"ird"} 1
# HELP lat_seconds Latency.
# TYPE lat_seconds histogram
lat_seconds_bucket{op="claim",le="0.1"} 2
lat_seconds_bucket{op="claim",le="1"} 2
lat_seconds_bucket{op="claim",le="+Inf"} 3
lat_seconds_sum{op="claim"} 5.15
lat_seconds_count{op="claim"} 3
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	if c.Value("replayed") != 2 || h.Count("claim") != 3 || h.Count("none") != 0 {
		t.Fatal("Value or Count disagrees with what was recorded")
	}
}
