package faultproxy

import "sync"

// Stats counts what the proxy did. A Stats from [Proxy.Stats] is a
// consistent snapshot: every request is counted under exactly one fault, so
//
//	Requests == None + LostAck + Inject503 + Inject429 + Reset + Delay + Down
//
// holds in every snapshot.
type Stats struct {
	// Requests is every request the proxy read, including those that
	// net/http's Transport re-sends on its own after a reset on a reused
	// connection (so it can exceed a sender's count of attempts).
	Requests uint64

	// One count per fault: what was decided for each request.
	None      uint64 // forwarded clean
	LostAck   uint64
	Inject503 uint64
	Inject429 uint64
	Reset     uint64
	Delay     uint64
	Down      uint64

	// Forwarded counts requests written in full to the target (from
	// net/http/httptrace's WroteRequest): None, LostAck and Delay
	// requests, less those that failed or that Close stopped first.
	Forwarded uint64
	// ForwardErrors counts forwards that failed: the target unreachable
	// or failing mid-answer, or the forward canceled because the client
	// went away or the proxy closed. A None request whose forward failed
	// gets a 502.
	ForwardErrors uint64
	// Dropped counts answers the target gave that the client never got
	// although the proxy meant to relay them: a Delay whose client had
	// gone by the time the answer could be written. LostAck answers are
	// not counted here.
	Dropped uint64
}

// Count returns the count of fault f (0 for an unknown fault).
func (s Stats) Count(f Fault) uint64 {
	switch f {
	case None:
		return s.None
	case LostAck:
		return s.LostAck
	case Inject503:
		return s.Inject503
	case Inject429:
		return s.Inject429
	case Reset:
		return s.Reset
	case Delay:
		return s.Delay
	case Down:
		return s.Down
	}
	return 0
}

// Injected returns the number of requests that got a fault (Down included).
func (s Stats) Injected() uint64 {
	return s.Requests - s.None
}

// counters is the mutable state behind Stats.
type counters struct {
	mu sync.Mutex
	s  Stats
}

func (c *counters) snapshot() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

func (c *counters) decided(f Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Requests++
	switch f {
	case None:
		c.s.None++
	case LostAck:
		c.s.LostAck++
	case Inject503:
		c.s.Inject503++
	case Inject429:
		c.s.Inject429++
	case Reset:
		c.s.Reset++
	case Delay:
		c.s.Delay++
	case Down:
		c.s.Down++
	}
}

func (c *counters) add(field *uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*field++
}
