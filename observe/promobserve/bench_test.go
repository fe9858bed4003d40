package promobserve_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/observe/promobserve"
)

// BenchmarkObserve measures what one request adds: its event and the two
// store calls of a first call (Claim, Complete).
func BenchmarkObserve(b *testing.B) {
	ev := middleware.Event{Outcome: middleware.Executed, Status: 201, Latency: time.Millisecond, Key: "k", Context: context.Background()}
	claim := middleware.StoreCall{Op: middleware.OpClaim, Latency: 100 * time.Microsecond, Context: context.Background()}
	complete := middleware.StoreCall{Op: middleware.OpComplete, Latency: 100 * time.Microsecond, Err: errors.New("lease lost"), Context: context.Background()}
	p, err := promobserve.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Observe(ev)
		p.ObserveStore(claim)
		p.ObserveStore(complete)
	}
}
