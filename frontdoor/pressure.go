package frontdoor

import (
	"context"
	"log/slog"
	"time"
)

// stallEvery is how often a body still arriving is checked for progress
// while the connections are crowded.
const stallEvery = time.Second

// crowded reports whether the connections are at or near MaxConns (one of
// which is kept for the connection being accepted): a new one waits for
// room in Accept, or is about to, and behind it others wait in the
// kernel's accept queue, where nothing of the server sees them.
func (c *connBounds) crowded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting > 0 || c.maxConns > 0 && c.open >= c.maxConns-1-c.maxConns/16
}

// watch checks e's body every stallEvery while it arrives: when the
// connections are crowded and the body has not moved since the last check
// (a body that never comes holds its connection until the rate's grace),
// it is cut off, so that its connection makes way for one waiting to be
// accepted. A known sender's body is never cut.
func (d *Door) watch(e *entry) {
	if e.g == nil {
		return
	}
	last := e.g.got.Load()
	var t *time.Timer
	t = time.AfterFunc(stallEvery, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !e.arriving || e.cut || e.known || e.released {
			return
		}
		got := e.g.got.Load()
		if got == last && d.conns.crowded() && d.cutN < d.maxCut && e.g.cut() {
			d.uncharge(e)
			e.cut = true
			d.cutN++
			d.stats.CutStalled++
			d.cuts.Warn(context.Background(), "request body cut off: it stalled while the connections are crowded", slog.String("client", e.client), slog.Int64("received", got))
			return
		}
		last = got
		t.Reset(stallEvery)
	})
	e.stop = t
}
