package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/internal/benchshape"
)

// Section 6: the hostile inputs of issue 16 (items 1, 4 and 5), each next
// to a benign document of about the same size, through geojson.Validate
// and, for a rejected document, the problem document the middleware would
// send.

// hostilePair is a hostile input and its benign twin.
type hostilePair struct {
	name, short     string // short: the chart's group label
	hostile, benign []byte
	hostileNote     string
	benignNote      string
}

func hostilePairs(o *options) []hostilePair {
	var ps []hostilePair
	bomb := benchshape.ProblemBomb(o.hostileBody, 100)
	ps = append(ps, hostilePair{
		name:    fmt.Sprintf("problem document, %d KiB body", o.hostileBody>>10),
		short:   fmt.Sprintf("422, %d KiB", o.hostileBody>>10),
		hostile: bomb, hostileNote: "one member name of '<' filling the body, then 100 numbers 1e400 (100 problems whose pointers repeat the name)",
		benign: benchshape.BigString(len(bomb)), benignNote: "a valid Feature with one string property filling the body",
	})
	for _, n := range o.hostileHoles {
		h := benchshape.Holes(n)
		ps = append(ps, hostilePair{
			name:    fmt.Sprintf("%d holes", n),
			short:   fmt.Sprintf("%dk holes", n/1000),
			hostile: h, hostileNote: fmt.Sprintf("a valid Polygon: a square shell with %d triangular holes", n),
			benign: benchshape.CircleOfSize(len(h), 1), benignNote: "a valid Polygon: a circle of the same size",
		})
	}
	ps = append(ps, hostilePair{
		name:    fmt.Sprintf("circle of %d vertices at 1e-200", o.hostileCircle),
		short:   "circle 1e-200",
		hostile: benchshape.Circle(o.hostileCircle, 1e-200), hostileNote: "a valid Polygon: a circle of radius 1e-200 around (1e-199, 5e-199)",
		benign: benchshape.Circle(o.hostileCircle, 1), benignNote: "the same circle at scale 1",
	})
	return ps
}

// answer validates data and renders the problem document of a
// ValidationError: the whole cost of the answer to one request.
func answer(data []byte) error {
	err := geojson.Validate(data, geojson.Options{})
	var verr *geojson.ValidationError
	if errors.As(err, &verr) {
		if len(verr.ProblemJSON()) > geojson.MaxProblemDocumentBytes {
			return fmt.Errorf("problem document over %d bytes", geojson.MaxProblemDocumentBytes)
		}
		return nil
	}
	return err
}

// allocated returns the bytes allocated by one call of fn on data, from
// runtime.MemStats: the total, which bounds the peak heap the call can
// add. The call is cold: two collections first empty the sync.Pools
// (geojson keeps its sweep buffers in one), so a small input does not
// look cheaper for reusing buffers a large one had to allocate.
func allocated(fn func([]byte) error, data []byte) (uint64, error) {
	if err := fn(data); err != nil {
		return 0, err
	}
	runtime.GC()
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	err := fn(data)
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc, err
}

// hostileCost is one measured input.
type hostileCost struct {
	bytes      int
	perByte    float64 // ns per input byte
	allocPerB  float64 // bytes allocated per input byte
	timeString string
}

// hostileRounds is how many times each pair is timed, hostile and benign
// in turn, keeping each one's best: on a shared machine the ratio of two
// measurements taken seconds apart is otherwise mostly noise.
const hostileRounds = 3

// measureHostile completes the measurement of data, timed at d, with its
// allocation.
func measureHostile(data []byte, d time.Duration) (hostileCost, error) {
	a, err := allocated(answer, data)
	if err != nil {
		return hostileCost{}, err
	}
	n := float64(len(data))
	return hostileCost{bytes: len(data), perByte: float64(d.Nanoseconds()) / n, allocPerB: float64(a) / n, timeString: fmtDur(d)}, nil
}

func runHostile(ctx context.Context, s *section) error {
	o := s.o
	pairs := hostilePairs(o)
	s.line("The inputs of issue 16 whose cost used to be far out of proportion to their size, each next to a benign document of about the same size.")
	s.line("Each call is `geojson.Validate` and, when the document is rejected, `ProblemJSON` (the 422 body the middleware sends).")
	s.line("Each input is timed %d times, hostile and benign in turn, each time the best of 5 batch means within %v after a checked first call; the table keeps each input's best.", hostileRounds, o.valTime/hostileRounds)
	s.line("Allocation is `runtime.MemStats.TotalAlloc` over one cold call (after two collections, which empty geojson's pool of sweep buffers): the total allocated, which bounds the peak heap the call can add.")
	s.line("Cost is given per input byte; the ratios divide the hostile input's by the benign one's.")
	s.line("")
	for _, p := range pairs {
		s.line("- **%s**: %s; benign: %s.", p.name, p.hostileNote, p.benignNote)
	}
	s.line("")
	header := []string{"input", "hostile bytes", "hostile time", "hostile ns/B", "hostile alloc B/B", "benign bytes", "benign time", "benign ns/B", "benign alloc B/B", "time ratio", "alloc ratio"}
	var rows [][]string
	var groups []string
	times := [][]float64{nil, nil}
	allocs := [][]float64{nil, nil}
	worstT, worstA := 0.0, 0.0
	for _, p := range pairs {
		var best [2]time.Duration
		for range hostileRounds {
			for i, data := range [2][]byte{p.hostile, p.benign} {
				d, err := timeOp(ctx, answer, data, o.valTime/hostileRounds)
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				if best[i] == 0 || d < best[i] {
					best[i] = d
				}
			}
		}
		h, err := measureHostile(p.hostile, best[0])
		if err != nil {
			return fmt.Errorf("%s, hostile: %w", p.name, err)
		}
		b, err := measureHostile(p.benign, best[1])
		if err != nil {
			return fmt.Errorf("%s, benign: %w", p.name, err)
		}
		rt, ra := h.perByte/b.perByte, h.allocPerB/b.allocPerB
		worstT, worstA = max(worstT, rt), max(worstA, ra)
		rows = append(rows, []string{p.name,
			fmt.Sprint(h.bytes), h.timeString, fmt.Sprintf("%.1f", h.perByte), fmt.Sprintf("%.2f", h.allocPerB),
			fmt.Sprint(b.bytes), b.timeString, fmt.Sprintf("%.1f", b.perByte), fmt.Sprintf("%.2f", b.allocPerB),
			fmt.Sprintf("%.1f×", rt), fmt.Sprintf("%.1f×", ra)})
		groups = append(groups, p.short)
		times[0], times[1] = append(times[0], h.perByte), append(times[1], b.perByte)
		allocs[0], allocs[1] = append(allocs[0], h.allocPerB), append(allocs[1], b.allocPerB)
		o.logf("hostile: %s done", p.name)
	}
	s.table(header, rows)
	names := []string{"hostile", "benign, same size"}
	if err := s.figure("hostile-time.svg", "time per input byte, hostile and benign inputs", barChart{
		title: "Time per input byte: hostile inputs and benign ones of the same size", yLabel: "ns per input byte",
		groups: groups, names: names, values: times,
	}.render()); err != nil {
		return err
	}
	if err := s.figure("hostile-alloc.svg", "bytes allocated per input byte, hostile and benign inputs", barChart{
		title: "Allocation per input byte: hostile inputs and benign ones of the same size", yLabel: "bytes allocated per input byte",
		groups: groups, names: names, values: allocs,
	}.render()); err != nil {
		return err
	}
	s.headline("hostile inputs (issue 16) against benign ones of the same size",
		"at most %.1f× the time and %.1f× the allocation per byte; problem documents at most %d KiB",
		worstT, worstA, geojson.MaxProblemDocumentBytes>>10)
	return nil
}
