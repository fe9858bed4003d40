package otelobserve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/observe/otelobserve"
)

// TestFrontDoorInstruments checks that a Door's decisions reach the
// meter: with its one work slot held, a second request is refused 503, and
// a collection shows the slot held and the refusal under the names of
// frontdoor.Stats.Series, a counter or a gauge as each says.
func TestFrontDoorInstruments(t *testing.T) {
	door, err := frontdoor.New(frontdoor.Config{MaxInFlight: 1, Wait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg, err := otelobserve.FrontDoor(mp, door)
	if err != nil {
		t.Fatal(err)
	}
	release, entered := make(chan struct{}), make(chan struct{})
	h := door.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusCreated)
	}))
	post := func() int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{}`)))
		return w.Code
	}
	done := make(chan int)
	go func() { done <- post() }()
	<-entered
	if code := post(); code != http.StatusServiceUnavailable {
		t.Errorf("second request answered %d, want 503", code)
	}
	got := collect(t, reader)
	close(release)
	if code := <-done; code != http.StatusCreated {
		t.Errorf("first request answered %d, want 201", code)
	}
	for k, want := range map[string]float64{
		"geoidem_frontdoor_slots_held":                           1,
		"geoidem_frontdoor_refused_total reason=server_busy":     1,
		"geoidem_frontdoor_refused_total reason=client_busy":     0,
		"geoidem_frontdoor_bodies_cut_total reason=slow":         0,
		"geoidem_frontdoor_connections_closed_total reason=host": 0,
	} {
		if v, ok := got[k]; !ok || v.n != want {
			t.Errorf("%s = %v (present %v), want %v", k, v.n, ok, want)
		}
	}
	(frontdoor.Stats{}).Series(func(name, _ string, counter bool, label, value string, _ float64) {
		k := name
		if label != "" {
			k += " " + label + "=" + value
		}
		if v, ok := got[k]; !ok {
			t.Errorf("%s not collected", k)
		} else if v.counter != counter {
			t.Errorf("%s: a counter %v, want %v", k, v.counter, counter)
		}
	})
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	if n := len(collect(t, reader)); n != 0 {
		t.Errorf("%d points collected after Unregister", n)
	}
}

type point struct {
	n       float64
	counter bool
}

// collect returns every point of reader's collection by name and
// attributes ("name key=value").
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]point{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var points []metricdata.DataPoint[float64]
			counter := false
			switch data := m.Data.(type) {
			case metricdata.Sum[float64]:
				points, counter = data.DataPoints, data.IsMonotonic
			case metricdata.Gauge[float64]:
				points = data.DataPoints
			default:
				t.Fatalf("%s: %T", m.Name, m.Data)
			}
			for _, p := range points {
				k := m.Name
				for _, kv := range p.Attributes.ToSlice() {
					k += " " + string(kv.Key) + "=" + kv.Value.String()
				}
				got[k] = point{p.Value, counter}
			}
		}
	}
	return got
}
