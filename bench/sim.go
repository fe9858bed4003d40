package main

import (
	"math"
	"math/rand/v2"
	"time"
)

// The two simulations (sections 4 and 5) share a discrete-event core: a
// binary min-heap of events in virtual time, in nanoseconds. Nothing sleeps.

type event struct {
	at     int64 // virtual time, ns
	seq    uint64
	client int32
	kind   uint8
}

// eventHeap orders events by time, then by the order they were pushed, so a
// run is a deterministic function of its random stream.
type eventHeap struct {
	ev  []event
	seq uint64
}

func (h *eventHeap) less(i, j int) bool {
	a, b := &h.ev[i], &h.ev[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (h *eventHeap) push(at int64, client int32, kind uint8) {
	h.seq++
	h.ev = append(h.ev, event{at: at, seq: h.seq, client: client, kind: kind})
	for i := len(h.ev) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.ev[i], h.ev[p] = h.ev[p], h.ev[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	top := h.ev[0]
	last := len(h.ev) - 1
	h.ev[0] = h.ev[last]
	h.ev = h.ev[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(l, m) {
			m = l
		}
		if r < last && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.ev[i], h.ev[m] = h.ev[m], h.ev[i]
		i = m
	}
	return top
}

func (h *eventHeap) len() int { return len(h.ev) }

// network draws one-way delays |N(mean, sd)|, as the AWS article's
// simulator does.
type network struct {
	mean, sd float64 // ns
	rnd      *rand.Rand
}

func newNetwork(mean, sd time.Duration, rnd *rand.Rand) network {
	return network{mean: float64(mean), sd: float64(sd), rnd: rnd}
}

func (n network) delay() int64 { return int64(math.Abs(n.mean + n.sd*n.rnd.NormFloat64())) }

// seedFor derives the seed of one independent run from the run's seed and
// the run's coordinates (variant, size, trial), so that runs can execute in
// any order, in parallel, and still give the same numbers.
func seedFor(seed uint64, coords ...uint64) (uint64, uint64) {
	h := seed ^ 0x9E3779B97F4A7C15
	for _, c := range coords {
		h = splitmix(h ^ c)
	}
	return h, splitmix(h)
}

func splitmix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

func newRand(seed uint64, coords ...uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seedFor(seed, coords...)))
}
