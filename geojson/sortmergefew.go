package geojson

// This file holds the merge of a few sorted runs in the order of least
// work, for mergeRuns: merging the adjacent pair of runs that is
// smallest together first, rather than in passes over all. Passes move
// every event once each, an odd last run's too, however short the runs
// being merged; here short runs (a ring's turning vertices, often runs
// of one or two among long chains) join their neighbours first, and the
// long runs are moved fewer times.

// maxFewRuns is the most runs that mergeFew merges; mergeRuns merges
// more in passes.
const maxFewRuns = 16

// mergeFew sorts the events, len(ends) <= maxFewRuns sorted runs of evs
// ending at ends (the last at len(evs)), by merging them into one,
// using tmp, of evs's length, as the other buffer. It returns the
// buffer that holds the sorted events, and the other.
func mergeFew(evs, tmp []event, ends []int32) (sorted, other []event) {
	var end [maxFewRuns]int32
	var inTmp [maxFewRuns]bool // the buffer that holds each run
	r := copy(end[:], ends)
	for r > 1 {
		// The adjacent pair least in size together.
		best, least := 0, int32(len(evs)+1)
		for i := range r - 1 {
			lo := int32(0)
			if i > 0 {
				lo = end[i-1]
			}
			if c := end[i+1] - lo; c < least {
				best, least = i, c
			}
		}
		i := best
		lo := int32(0)
		if i > 0 {
			lo = end[i-1]
		}
		mid, hi := end[i], end[i+1]
		left, right := evs, evs
		if inTmp[i] {
			left = tmp
		}
		if inTmp[i+1] {
			right = tmp
		}
		// The merge goes to the buffer that holds neither run's events
		// at its place, or, when the runs are in different buffers, to
		// the right run's, which the merge writes only where it has
		// read already: the k-th event out goes where the right run's
		// j-th event was, for k <= j, when j events are taken from it.
		outTmp := !inTmp[i]
		if inTmp[i] != inTmp[i+1] {
			outTmp = inTmp[i+1]
		}
		out := evs
		if outTmp {
			out = tmp
		}
		mergeEvents(out[lo:hi], left[lo:mid], right[mid:hi])
		inTmp[i] = outTmp
		end[i] = hi
		copy(end[i+1:r], end[i+2:r])
		copy(inTmp[i+1:r], inTmp[i+2:r])
		r--
	}
	if inTmp[0] {
		return tmp, evs
	}
	return evs, tmp
}
