package promobserve_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/observe/promobserve"
)

// TestFrontDoorSeries checks that a Door's decisions reach the registry:
// with its one work slot held, a second request is refused 503, and the
// scrape shows the slot held and the refusal, every other series at 0.
func TestFrontDoorSeries(t *testing.T) {
	door, err := frontdoor.New(frontdoor.Config{MaxInFlight: 1, Wait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(promobserve.FrontDoor(door)); err != nil {
		t.Fatal(err)
	}
	release, entered := make(chan struct{}), make(chan struct{})
	h := door.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusCreated)
	}))
	post := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/features", strings.NewReader(`{}`)))
		return w
	}
	done := make(chan int)
	go func() { done <- post().Code }()
	<-entered
	if code := post().Code; code != http.StatusServiceUnavailable {
		t.Errorf("second request answered %d, want 503", code)
	}
	want := `# HELP geoidem_frontdoor_refused_total Requests refused for want of room, by reason: server_busy (503) or client_busy (429, past the client's share).
# TYPE geoidem_frontdoor_refused_total counter
geoidem_frontdoor_refused_total{reason="client_busy"} 0
geoidem_frontdoor_refused_total{reason="server_busy"} 1
# HELP geoidem_frontdoor_slots_held Work slots held: requests whose bodies have arrived and whose handlers run.
# TYPE geoidem_frontdoor_slots_held gauge
geoidem_frontdoor_slots_held 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "geoidem_frontdoor_refused_total", "geoidem_frontdoor_slots_held"); err != nil {
		t.Error(err)
	}
	close(release)
	if code := <-done; code != http.StatusCreated {
		t.Errorf("first request answered %d, want 201", code)
	}
	n, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	(frontdoor.Stats{}).Series(func(string, string, bool, string, string, float64) { series++ })
	if n != series {
		t.Errorf("%d series gathered, want %d", n, series)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader("# HELP geoidem_frontdoor_slots_held Work slots held: requests whose bodies have arrived and whose handlers run.\n# TYPE geoidem_frontdoor_slots_held gauge\ngeoidem_frontdoor_slots_held 0\n"), "geoidem_frontdoor_slots_held"); err != nil {
		t.Error(err)
	}
}
