package otelobserve_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/observe/otelobserve"
)

// BenchmarkObserve measures what one request adds through each observer:
// its event and the two store calls of a first call (Claim, Complete).
func BenchmarkObserve(b *testing.B) {
	ev := middleware.Event{Outcome: middleware.Executed, Status: 201, Latency: time.Millisecond, Key: "k", Context: context.Background()}
	claim := middleware.StoreCall{Op: middleware.OpClaim, Latency: 100 * time.Microsecond, Context: context.Background()}
	complete := middleware.StoreCall{Op: middleware.OpComplete, Latency: 100 * time.Microsecond, Err: errors.New("lease lost"), Context: context.Background()}

	b.Run("OTelMetrics", func(b *testing.B) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		t, err := otelobserve.New(mp, noop.NewTracerProvider())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			t.Observe(ev)
			t.ObserveStore(claim)
			t.ObserveStore(complete)
		}
	})
}
