package frontdoor

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/problem"
)

// Problem types of the Door's refusals: the middleware's, since a sender
// meets them in the same place.
const (
	ProblemServerBusy = problem.TypeBase + "server-busy" // 503
	ProblemClientBusy = problem.TypeBase + "client-busy" // 429
)

// arrive charges e's body bytes, waiting up to Wait for room and making
// room by cutting off a body still arriving once it has waited cutAfter
// (at once for a known sender). It returns 0 once charged, the status
// that refuses e and when room frees, or -1 when r's client went away.
func (d *Door) arrive(r *http.Request, e *entry) (int, time.Duration) {
	now := e.start
	deadline, cutAt := now.Add(d.wait), now.Add(d.cutAfter)
	if e.known {
		cutAt = now
	}
	d.mu.Lock()
	for {
		ok, clientFull := d.bytesFit(e)
		if !ok && !clientFull && !now.Before(cutAt) && d.makeRoom(e) {
			continue
		}
		if ok {
			d.charge(e)
			d.mu.Unlock()
			return 0, 0
		}
		if !now.Before(deadline) {
			status, wait := d.refusal(now, clientFull, true)
			d.mu.Unlock()
			return status, wait
		}
		ch := d.changed
		d.mu.Unlock()
		until := deadline
		if now.Before(cutAt) {
			until = cutAt
		}
		if !d.sleep(r, ch, until.Sub(now)) {
			return -1, 0
		}
		now = time.Now()
		d.mu.Lock()
	}
}

// work takes a work slot for e, waiting up to Wait for one. It returns 0
// once taken, the status that refuses e and when a slot frees, or -1 when
// r's client went away.
func (d *Door) work(r *http.Request, e *entry) (int, time.Duration) {
	now := time.Now()
	deadline := now.Add(d.wait)
	d.mu.Lock()
	for {
		ok, clientFull := d.slotFits(e)
		if ok {
			e.working, e.workStart = true, now
			d.n++
			d.clients[e.client].n++
			if e.known {
				d.knownN++
				d.stats.KnownAdmitted++
			}
			d.stats.PeakSlots = max(d.stats.PeakSlots, d.n)
			d.mu.Unlock()
			return 0, 0
		}
		if !now.Before(deadline) {
			status, wait := d.refusal(now, clientFull, false)
			d.mu.Unlock()
			return status, wait
		}
		ch := d.changed
		d.mu.Unlock()
		if !d.sleep(r, ch, deadline.Sub(now)) {
			return -1, 0
		}
		now = time.Now()
		d.mu.Lock()
	}
}

// sleep waits until room may have freed (ch closed) or for d, and reports
// false when r's client went away first.
func (d *Door) sleep(r *http.Request, ch chan struct{}, dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-r.Context().Done():
		return false
	}
	return true
}

// bytesFit reports whether e's bytes fit now, and, when they do not,
// whether it is its client's share that is full. A client's share bites
// only while another client holds some: a lone sender may use it all.
func (d *Door) bytesFit(e *entry) (ok, clientFull bool) {
	if d.maxB < 0 {
		return true, false
	}
	// A body alone larger than a bound fits when nothing else holds it.
	limit := d.maxB
	if !e.known {
		if u := d.b - d.knownB; u > 0 && u+e.size > d.maxB-d.reservedB {
			return false, false
		}
		if c := d.clients[e.client]; c != nil && d.b > c.b && c.b+e.size > d.maxClientB && d.b+e.size > d.crowdedB {
			return false, true
		}
	}
	if e.size > d.large && d.largeB > 0 && d.largeB+e.size > d.maxLargeB {
		return false, false
	}
	return d.b+e.size <= limit || d.b == 0, false
}

// slotFits reports whether a work slot is free for e now, and, when none
// is, whether it is its client's share that is full (only while another
// client holds a slot).
func (d *Door) slotFits(e *entry) (ok, clientFull bool) {
	if d.maxN < 0 {
		return true, false
	}
	if !e.known {
		if d.n-d.knownN+1 > d.maxN-d.reservedN {
			return false, false
		}
		if c := d.clients[e.client]; d.n > c.n && c.n+1 > d.maxClientN && d.n+1 > d.crowdedN {
			return false, true
		}
	}
	return d.n+1 <= d.maxN, false
}

// charge counts e's bytes and its body arriving.
func (d *Door) charge(e *entry) {
	c := d.clients[e.client]
	if c == nil {
		c = &share{}
		d.clients[e.client] = c
	}
	c.b += e.size
	c.arriving++
	c.entries++
	e.arriving = true
	d.held[e] = struct{}{}
	d.watch(e)
	d.b += e.size
	if e.known {
		d.knownB += e.size
	}
	if e.size > d.large {
		d.largeB += e.size
	}
}

// uncharge gives back e's bytes (once: a body cut off gave them back).
func (d *Door) uncharge(e *entry) {
	if e.cut {
		return
	}
	d.clients[e.client].b -= e.size
	d.b -= e.size
	if e.known {
		d.knownB -= e.size
	}
	if e.size > d.large {
		d.largeB -= e.size
	}
}

// makeRoom cuts off one body still arriving to make room for e, and
// reports whether it did: the slowest (fewest bytes a second so far) of
// those whose client has more bodies arriving than e's (any, for a known
// sender), never a known sender's; ties go to the client with the most
// arriving. At most maxCut
// bodies are cut off and not yet gone at once.
func (d *Door) makeRoom(e *entry) bool {
	if d.cutN >= d.maxCut {
		return false
	}
	mine := 0
	if c := d.clients[e.client]; c != nil {
		mine = c.arriving
	}
	now := time.Now()
	var victim *entry
	var slowest float64
	most := 0
	for f := range d.held {
		if !f.arriving || f.known || f.cut || f.uncuttable || f.g == nil {
			continue
		}
		held := d.clients[f.client].arriving
		if held <= mine && !e.known {
			continue
		}
		rate := float64(f.g.got.Load()) / max(now.Sub(f.start).Seconds(), 1e-3)
		if victim == nil || rate < slowest || rate == slowest && held > most {
			victim, slowest, most = f, rate, held
		}
	}
	if victim == nil {
		return false
	}
	if !victim.g.cut() {
		victim.uncuttable = true
		return true // look again: its body has just ended
	}
	d.uncharge(victim)
	victim.cut = true
	d.cutN++
	d.stats.CutForRoom++
	d.cuts.Warn(context.Background(), "request body cut off to make room for another client", slog.String("client", victim.client), slog.Int64("received", victim.g.got.Load()))
	return true
}

// ended marks e's body no longer arriving: read in full, or failed. It
// reports whether the body was cut off meanwhile: a cut may win the race
// with the read of the body's last bytes, and a body cut off gave its
// bytes back, so it must not go on to work.
func (d *Door) ended(e *entry) (cut bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.arriving {
		e.arriving = false
		d.clients[e.client].arriving--
	}
	if e.stop != nil {
		e.stop.Stop()
	}
	return e.cut
}

// refusal is the answer to a request that found no room by its deadline:
// 503 server-busy, or 429 client-busy when its client's share is what is
// full, and when room is expected to free (of bytes too, when bytes is
// set). Called with d.mu held.
func (d *Door) refusal(now time.Time, clientFull, bytes bool) (int, time.Duration) {
	status := http.StatusServiceUnavailable
	if clientFull {
		status = http.StatusTooManyRequests
	}
	return status, d.firstFree(now, bytes)
}

// release gives back what e holds, once: its work slot, its bytes, and
// its body's place among those arriving; and wakes the requests waiting
// for room.
func (d *Door) release(e *entry) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.released {
		return
	}
	e.released = true
	if e.stop != nil {
		e.stop.Stop()
	}
	c := d.clients[e.client]
	if e.arriving {
		e.arriving = false
		c.arriving--
	}
	d.uncharge(e)
	if e.cut {
		d.cutN--
	}
	if e.working {
		d.n--
		c.n--
		if e.known {
			d.knownN--
		}
		d.avg += (now.Sub(e.workStart) - d.avg) / 8
	}
	delete(d.held, e)
	if c.entries--; c.entries == 0 {
		delete(d.clients, e.client)
	}
	close(d.changed)
	d.changed = make(chan struct{})
}

// firstFree returns how long from now until room is expected to free:
// the first end among the work slots held (each expected to take what
// work slots have been taking, or, past that, as long again) and, for
// bytes, the first deadline of a body arriving (it has arrived or been
// cut off by then). At least RetryAfter.
func (d *Door) firstFree(now time.Time, bytes bool) time.Duration {
	var first time.Time
	for f := range d.held {
		var end time.Time
		switch {
		case f.working:
			end = f.workStart.Add(d.avg)
			if !end.After(now) {
				end = now.Add(max(d.avg, now.Sub(f.workStart)))
			}
		case bytes && f.arriving && f.g != nil:
			end = f.g.deadline()
		default:
			continue
		}
		if first.IsZero() || end.Before(first) {
			first = end
		}
	}
	if first.IsZero() {
		return d.retryAfter
	}
	return max(first.Sub(now), d.retryAfter)
}

// refuse answers r with status (503 server-busy or 429 client-busy) and a
// Retry-After of wait, and counts it.
func (d *Door) refuse(w http.ResponseWriter, r *http.Request, status int, wait time.Duration) {
	d.mu.Lock()
	if status == http.StatusTooManyRequests {
		d.stats.RefusedClient++
	} else {
		d.stats.RefusedBusy++
	}
	d.mu.Unlock()
	if status == http.StatusTooManyRequests {
		problem.Write(w, problem.Details{Type: ProblemClientBusy, Title: "Too many requests in flight from this client", Status: status,
			Detail: "This client already has its share of the requests or bytes in flight; nothing was claimed. Retry after Retry-After with the same key.", RetryAfter: wait})
		d.refusals.Warn(r.Context(), "request refused: the client has its share in flight", slog.String("client", d.client(r)))
		return
	}
	problem.Write(w, problem.Details{Type: ProblemServerBusy, Title: "Server busy", Status: status,
		Detail: "The server has as many requests or bytes in flight as it takes; nothing was claimed. Retry after Retry-After with the same key.", RetryAfter: wait})
	d.refusals.Warn(r.Context(), "request refused: too much in flight", slog.String("client", d.client(r)))
}

// knownAt reports whether r's client is a known sender at now: its
// address (as names finds it, behind trusted proxies) in KnownNetworks, or a body of its verified within KnownFor.
func (d *Door) knownAt(r *http.Request, client string, now time.Time) bool {
	if len(d.networks) > 0 {
		if ip, ok := d.names.proxies.Addr(r); ok {
			for _, p := range d.networks {
				if p.Contains(ip) {
					return true
				}
			}
		}
	}
	if d.verify == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	until, ok := d.known[client]
	return ok && now.Before(until)
}

// maxKnown bounds the clients remembered as known by a verified body.
const maxKnown = 4096

// remember makes e's client known for KnownFor, and e's request a known
// sender's from now on.
func (d *Door) remember(e *entry) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.known[e.client]; !ok && len(d.known) >= maxKnown {
		for c, until := range d.known { // the expired first, else any
			if !now.Before(until) || len(d.known) >= maxKnown {
				delete(d.known, c)
			}
			if len(d.known) < maxKnown {
				break
			}
		}
	}
	d.known[e.client] = now.Add(d.knownFor)
	if !e.known {
		e.known = true
		if !e.cut && !e.released {
			d.knownB += e.size
		}
	}
}

// Stats returns a snapshot of the Door.
func (d *Door) Stats() Stats {
	d.mu.Lock()
	s := d.stats
	s.Bytes, s.Slots, s.KnownSlots = d.b, d.n, d.knownN
	for e := range d.held {
		if e.arriving {
			s.Arriving++
		}
	}
	d.mu.Unlock()
	c := d.conns.Stats()
	s.Conns, s.PeakConns, s.IdleConns, s.HeldConns, s.WaitingConns = c.Open, c.PeakOpen, c.Idle, c.Held, c.Waiting
	s.ConnsRefused, s.ConnsClosedIdle, s.ConnsClosedBusy, s.ConnsEvicted, s.ConnsWaited = c.Refused, c.ClosedIdle, c.ClosedBusy, c.Evicted, c.Waited
	if d.rate != nil {
		// The rate counts a body cut off once its 408 is out; the Door,
		// when it cuts: for a moment the Door's count may be ahead.
		if all, door := d.rate.Stats().Cut, s.CutForRoom+s.CutStalled; all > door {
			s.CutSlow = all - door
		}
	}
	return s
}
