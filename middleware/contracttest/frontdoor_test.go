package contracttest_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/frontdoor"
	"github.com/geoidem/geoidem/middleware/contracttest"
)

// A receiver behind the front door's connection bounds, at eight
// connections per host (the Door's default, set here so that the bound
// checked is the one configured), takes the whole suite as it takes one
// sender: the suite keeps to fewer connections than that, and its
// concurrent deliveries queue for them in the sender rather than meet
// resets at the receiver.
func TestRunBehindFrontDoor(t *testing.T) {
	const perHost = 8
	door, err := frontdoor.New(frontdoor.Config{MaxConnsPerHost: perHost})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &ingest{work: 20 * time.Millisecond}
	connState := door.Server(nil).ConnState // the Door's connection bounds alone, not its handler's wrapping
	srv := &http.Server{Handler: wrapped(t, newStore(), h), ConnState: connState, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(door.Listener(ln))
	t.Cleanup(func() { srv.Close() })
	contracttest.Run(t, contracttest.Target{
		URL:        "http://" + ln.Addr().String(),
		Path:       "/features",
		Executions: h.executions,
	})
	if st := door.Stats(); st.ConnsRefused != 0 || st.PeakConns > perHost {
		t.Errorf("the suite met the front door: %d connections refused, %d open at once; want none refused, at most %d",
			st.ConnsRefused, st.PeakConns, perHost)
	}
}
