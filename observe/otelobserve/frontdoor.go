package otelobserve

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/geoidem/geoidem/frontdoor"
)

// FrontDoor records d's decisions and state as observable instruments on a
// meter of mp (nil: the global provider of package otel), read from
// d.Stats at each collection: a counter or a gauge per series of
// frontdoor.Stats.Series, under the same name (geoidem_frontdoor_…, as
// examples/ingest's /metrics and package promobserve's FrontDoor name
// them, so that one dashboard reads either) with its one label as an
// attribute of the same name ("reason", "state"). Unregister the returned
// registration to stop reading d.
func FrontDoor(mp metric.MeterProvider, d *frontdoor.Door) (metric.Registration, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(instrumentationName)
	counters := map[string]metric.Float64ObservableCounter{}
	gauges := map[string]metric.Float64ObservableGauge{}
	var instruments []metric.Observable
	for _, s := range (frontdoor.Stats{}).Series() {
		if _, ok := counters[s.Name]; ok {
			continue
		}
		if _, ok := gauges[s.Name]; ok {
			continue
		}
		if s.Counter {
			c, err := meter.Float64ObservableCounter(s.Name, metric.WithDescription(s.Help))
			if err != nil {
				return nil, err
			}
			counters[s.Name] = c
			instruments = append(instruments, c)
		} else {
			g, err := meter.Float64ObservableGauge(s.Name, metric.WithDescription(s.Help))
			if err != nil {
				return nil, err
			}
			gauges[s.Name] = g
			instruments = append(instruments, g)
		}
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range d.Stats().Series() {
			var opts []metric.ObserveOption
			if s.Label != "" {
				opts = append(opts, metric.WithAttributes(attribute.String(s.Label, s.Value)))
			}
			if c, ok := counters[s.Name]; ok {
				o.ObserveFloat64(c, s.N, opts...)
			} else {
				o.ObserveFloat64(gauges[s.Name], s.N, opts...)
			}
		}
		return nil
	}, instruments...)
}
