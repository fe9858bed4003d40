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
	var err error
	(frontdoor.Stats{}).Series(func(name, help string, counter bool, _, _ string, _ float64) {
		if _, ok := counters[name]; ok || err != nil {
			return
		}
		if _, ok := gauges[name]; ok {
			return
		}
		if counter {
			var c metric.Float64ObservableCounter
			if c, err = meter.Float64ObservableCounter(name, metric.WithDescription(help)); err == nil {
				counters[name] = c
				instruments = append(instruments, c)
			}
		} else {
			var g metric.Float64ObservableGauge
			if g, err = meter.Float64ObservableGauge(name, metric.WithDescription(help)); err == nil {
				gauges[name] = g
				instruments = append(instruments, g)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		d.Stats().Series(func(name, _ string, _ bool, label, value string, n float64) {
			var opts []metric.ObserveOption
			if label != "" {
				opts = append(opts, metric.WithAttributes(attribute.String(label, value)))
			}
			if c, ok := counters[name]; ok {
				o.ObserveFloat64(c, n, opts...)
			} else {
				o.ObserveFloat64(gauges[name], n, opts...)
			}
		})
		return nil
	}, instruments...)
}
