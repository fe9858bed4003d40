package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
)

// event is one delivery's worth of work: a Feature, its key, and whether
// it is invalid (no id) or sent twice at once.
type event struct {
	id    string // the feature id; "" for an invalid event
	key   string
	body  []byte
	twice *rendezvous // non-nil: sent by two senders at the same moment
}

// rendezvous lets the two senders of a duplicate start together.
type rendezvous struct {
	n  atomic.Int32
	ch chan struct{}
}

// arrive waits, at most a second, for the other sender.
func (r *rendezvous) arrive() {
	if r.n.Add(1) == 2 {
		close(r.ch)
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-r.ch:
	case <-t.C:
	}
}

// Fractions of the events that are invalid and that are sent twice.
const (
	invalidShare = 0.03
	twiceShare   = 0.05
)

// stampBase is the observation time of the first stamped event; event i
// was observed i seconds later.
var stampBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// makeEvents returns n events, seeded: a fixed number (at least one each)
// are invalid or sent twice, at seeded positions. With stamped, each valid
// event's feature carries an observation_time of its own, so that a second
// run of an event is stale to the feature store: its effect is idempotent
// by the event, written once however often it runs.
func makeEvents(n int, seed uint64, run string, stamped bool) []event {
	rng := rand.New(rand.NewPCG(seed, 0xe7e47))
	perm := rng.Perm(n)
	invalid := max(1, int(float64(n)*invalidShare+0.5))
	twice := max(1, int(float64(n)*twiceShare+0.5))
	if n < 2 {
		invalid, twice = 0, 0
	}
	kind := make([]byte, n)
	for _, i := range perm[:min(invalid, n)] {
		kind[i] = 'x'
	}
	for _, i := range perm[min(invalid, n):min(invalid+twice, n)] {
		kind[i] = '2'
	}
	evs := make([]event, n)
	for i := range evs {
		lon, lat := rng.Float64()*360-180, rng.Float64()*180-90
		e := event{key: fmt.Sprintf("chaos-%s-%d", run, i)}
		if kind[i] == 'x' {
			e.body = fmt.Appendf(nil, `{"type":"Feature","geometry":{"type":"Point","coordinates":[%.6f,%.6f]},"properties":{"seq":%d}}`, lon, lat, i)
		} else {
			e.id = "f" + strconv.Itoa(i)
			e.body = fmt.Appendf(nil, `{"type":"Feature","id":%q,"geometry":{"type":"Point","coordinates":[%.6f,%.6f]},"properties":{"seq":%d}}`, e.id, lon, lat, i)
		}
		if stamped && e.id != "" {
			t := stampBase.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
			e.body = fmt.Appendf(nil, `{"type":"Feature","id":%q,"geometry":{"type":"Point","coordinates":[%.6f,%.6f]},"properties":{"seq":%d,"observation_time":%q}}`, e.id, lon, lat, i, t)
		}
		if kind[i] == '2' {
			e.twice = &rendezvous{ch: make(chan struct{})}
		}
		evs[i] = e
	}
	return evs
}
