package geojson

import (
	"cmp"
	"math"
	"slices"
)

// sortEvents sorts s.evs lexicographically by point, x then y. It
// distributes the events into len(s.evs) buckets by x, with a bucket
// index that is a monotone function of x, and then sorts each bucket by
// comparison: linear time for any reasonable spread of vertices, and
// O(n log n) in the worst case (everything in one bucket).
func (s *sweeper) sortEvents() {
	var lo, hi float64
	if len(s.evs) > 0 {
		lo, hi = s.evs[0].p.x, s.evs[0].p.x
	}
	for _, e := range s.evs {
		if x := e.p.x; x < lo {
			lo = x
		} else if x > hi {
			hi = x
		}
	}
	s.sortEventsIn(lo, hi)
}

// sortEventsIn is sortEvents given the least and the greatest x of the
// events, lo and hi, which run finds as it makes them.
func (s *sweeper) sortEventsIn(lo, hi float64) {
	n := len(s.evs)
	if n < minSortRuns {
		sortEventsCmp(s.evs)
		return
	}
	if !s.general && s.mergeRuns() {
		return
	}
	scale := float64(n-1) / (hi - lo)
	if hi == lo || math.IsInf(scale, 0) || math.IsNaN(scale) {
		sortEventsCmp(s.evs)
		return
	}
	// Floating-point subtraction, multiplication and truncation are
	// monotone, so bucket(x) never decreases as x grows. (x-lo)*scale is
	// in [0, n-1], but for rounding; the conversion to uint makes
	// anything else (NaN) large, for the one bound.
	bucket := func(x float64) int32 {
		return int32(min(uint(int((x-lo)*scale)), uint(n-1)))
	}
	// Each event's bucket, computed once; then the buckets' ends, from
	// their sizes; then the events placed from each bucket's end down,
	// which leaves end[b] at the start of bucket b.
	bk := grow(s.bk, n)
	end := grow(s.count, n)
	clear(end)
	for i, e := range s.evs {
		b := bucket(e.p.x)
		bk[i] = b
		end[b]++
	}
	// The buckets of more than maxInsertion events, the first few of
	// them (all: nbig <= len(big)), sorted by comparison before the
	// insertion sort.
	var big [16]int32
	nbig := 0
	for i := range n {
		c := end[i]
		if c > maxInsertion {
			if nbig < len(big) {
				big[nbig] = int32(i)
			}
			nbig++
		}
		if i > 0 {
			end[i] = c + end[i-1]
		}
	}
	out := grow(s.evs2, n)
	for i := len(s.evs) - 1; i >= 0; i-- {
		b := bk[i]
		end[b]--
		out[end[b]] = s.evs[i]
	}
	bounds := func(b int) (from, to int) {
		from, to = int(end[b]), n
		if b+1 < n {
			to = int(end[b+1])
		}
		return from, to
	}
	if nbig <= len(big) {
		for _, b := range big[:nbig] {
			from, to := bounds(int(b))
			sortEventsCmp(out[from:to])
		}
	} else {
		for b := range n {
			if from, to := bounds(b); to-from > maxInsertion {
				sortEventsCmp(out[from:to])
			}
		}
	}
	// An event of a later bucket lies after every event of an earlier
	// one, so one insertion sort over all moves events only within
	// their buckets, of at most maxInsertion unsorted events.
	insertionSortEvents(out)
	s.count, s.bk = end, bk
	s.evs, s.evs2 = out, s.evs
}

// minSortRuns is the fewest events that sortEventsIn sorts by runs or
// buckets rather than by comparison.
const minSortRuns = 64

// maxInsertion is the most events of a bucket that sortEvents sorts by
// insertion.
const maxInsertion = 12

// maxRunsShare is the fewest events per run, on average, for which
// mergeRuns sorts: with fewer, the bucket sort is faster.
const maxRunsShare = 16

// earlyRuns is the fewest runs after which mergeRuns gives up when the
// runs so far average fewer than maxRunsShare/2 events.
const earlyRuns = 32

// mergeRuns sorts s.evs, if it is a few long monotone runs (a ring's
// vertices mostly are, in a smooth ring: a convex ring is two), by
// merging the runs, and reports whether it did: O(n log r) for r runs.
// It finds the runs first, reversing the falling ones, and gives up when
// they are too many, or start too short (leaving s.evs permuted, which
// the bucket sort does not mind).
func (s *sweeper) mergeRuns() bool {
	evs := s.evs
	n := len(evs)
	limit := n / maxRunsShare
	ends := s.count[:0]
	for i := 0; i < n; {
		j := i + 1
		if j < n && lessEvent(evs[j], evs[j-1]) {
			for j < n && lessEvent(evs[j], evs[j-1]) {
				j++
			}
			slices.Reverse(evs[i:j])
		} else {
			for j < n && lessEvent(evs[j-1], evs[j]) {
				j++
			}
		}
		// Too many runs, or, past the first few, too many for the
		// events so far: the rest is unlikely to make up for them.
		if len(ends) == limit || len(ends) >= earlyRuns && len(ends)*maxRunsShare > 2*j {
			s.count = ends
			return false
		}
		ends = append(ends, int32(j))
		i = j
	}
	src, dst := evs, grow(s.evs2, n)
	if len(ends) <= maxFewRuns {
		s.evs, s.evs2 = mergeFew(src, dst, ends)
		s.count = ends[:1]
		return true
	}
	for len(ends) > 1 {
		// Merge runs 2k and 2k+1 of src into dst; a last odd run is
		// copied.
		w, from := 0, int32(0)
		for k := 0; k < len(ends); k += 2 {
			if k+1 == len(ends) {
				copy(dst[from:], src[from:ends[k]])
				ends[w] = ends[k]
				w++
				break
			}
			mergeEvents(dst[from:ends[k+1]], src[from:ends[k]], src[ends[k]:ends[k+1]])
			ends[w] = ends[k+1]
			from = ends[k+1]
			w++
		}
		ends = ends[:w]
		src, dst = dst, src
	}
	s.count = ends
	s.evs, s.evs2 = src, dst
	return true
}

// mergeEvents merges sorted a and b into out, len(a)+len(b) long, taking
// from a first on ties.
func mergeEvents(out, a, b []event) {
	out = out[:len(a)+len(b)]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		e, f := &a[i], &b[j]
		if f.p.x < e.p.x || f.p.x == e.p.x && f.p.y < e.p.y {
			out[i+j] = *f
			j++
		} else {
			out[i+j] = *e
			i++
		}
	}
	copy(out[i+j:], a[i:])
	copy(out[len(a)+j:], b[j:])
}

func lessEvent(a, b event) bool {
	return a.p.x < b.p.x || (a.p.x == b.p.x && a.p.y < b.p.y)
}

func insertionSortEvents(evs []event) {
	for i := 1; i < len(evs); i++ {
		if e := evs[i]; lessEvent(e, evs[i-1]) {
			j := i
			for ; j > 0 && lessEvent(e, evs[j-1]); j-- {
				evs[j] = evs[j-1]
			}
			evs[j] = e
		}
	}
}

// sortEventsCmp sorts events by point, x then y.
func sortEventsCmp(evs []event) {
	slices.SortFunc(evs, func(e, f event) int {
		if c := cmp.Compare(e.p.x, f.p.x); c != 0 {
			return c
		}
		return cmp.Compare(e.p.y, f.p.y)
	})
}

// grow returns b resliced to n, or a new slice of n when b has less room;
// its contents are the caller's to overwrite.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}
